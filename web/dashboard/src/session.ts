/** The signed-in user, for the pages that speak of the account itself (the wallet's "credits are added by…"). */
import { createContext } from 'preact';

/** The signed-in user, as `GET /api/auth/state` (or sign-in) gives it. */
export interface SessionUser {
  id: string;
  email: string;
  name: string;
}

/** The signed-in user of the dashboard's shell; null outside it (the sign-in page). */
export const SessionContext = createContext<SessionUser | null>(null);
