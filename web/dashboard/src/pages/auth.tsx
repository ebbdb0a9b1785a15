import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import type { SessionUser } from '../main.tsx';
import { useAction } from '../components.tsx';

/** Sign in or create an account; both start a dashboard session (cookie) and return its CSRF token. */
/**
 * The session a sign-up started, or null: sign-up answers alike whether or not the email was free, so only the
 * browser's state says whether it is now signed in.
 */
async function signedInSession(): Promise<{ user: SessionUser; csrfToken: string } | null> {
  const state = await api<{ signedIn: true; user: SessionUser; csrfToken: string } | { signedIn: false }>(
    'GET',
    '/api/auth/state',
  ).catch(() => null);
  return state?.signedIn ? { user: state.user, csrfToken: state.csrfToken } : null;
}

export function AuthPage(props: {
  onSignedIn: (session: { user: SessionUser; csrfToken: string }) => void;
  themeButton: ComponentChildren;
  /** Why the user is asked to sign in (a session that ended), shown above the form. */
  notice?: string | null;
  /** Whether anyone may create an account (false: the operator closed sign-up, and only sign-in is offered). */
  signUpOpen: boolean;
}) {
  const [chosenMode, setMode] = useState<'signin' | 'signup'>(location.hash.includes('signup') ? 'signup' : 'signin');
  const mode = props.signUpOpen ? chosenMode : 'signin';
  const { busy, error, setError, run } = useAction();
  const signup = mode === 'signup';

  async function submit(event: Event) {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    await run(async () => {
      const body: Record<string, string> = { email: String(form.get('email')), password: String(form.get('password')) };
      if (signup && form.get('name')) body.name = String(form.get('name'));
      const answer = await api('POST', `/api/auth/${mode}`, body);
      // Sign-up answers alike whether or not the email was free (so it reveals no account); only a new
      // account comes with a session, so the session is confirmed before the dashboard opens.
      const session = signup ? await signedInSession() : answer;
      if (!session) {
        setMode('signin');
        setError('If this email already has an account, sign in with its password.');
        return;
      }
      props.onSignedIn(session);
      if (signup) location.hash = '#/wallet';
    });
  }

  return (
    <div class="auth">
      <div class="auth-top">{props.themeButton}</div>
      <main class="auth-card">
        <div class="brand">
          <span class="logo" aria-hidden="true">
            T
          </span>
          Tollgate
        </div>
        <h1>{signup ? 'Create your account' : 'Sign in'}</h1>
        <p class="lead">
          {signup
            ? 'One account for every model, with a wallet you control and limits for every app.'
            : 'Welcome back.'}
        </p>
        {props.notice && !signup && (
          <div class="notice" role="status" data-testid="session-ended">
            {props.notice}
          </div>
        )}
        <form onSubmit={submit}>
          {signup && (
            <label>
              Name
              <input name="name" autoComplete="name" />
            </label>
          )}
          <label>
            Email
            <input name="email" type="email" autoComplete="email" required />
          </label>
          <label>
            Password
            <input
              name="password"
              type="password"
              autoComplete={signup ? 'new-password' : 'current-password'}
              minLength={signup ? 8 : undefined}
              required
            />
          </label>
          {error && (
            <p class="error-note" role="alert">
              {error}
            </p>
          )}
          <button class="btn primary wide" type="submit" disabled={busy}>
            {signup ? 'Create account' : 'Sign in'}
          </button>
        </form>
        {props.signUpOpen ? (
          <p class="switch">
            {signup ? 'Have an account? ' : 'New here? '}
            <button
              type="button"
              class="link"
              onClick={() => {
                setMode(signup ? 'signin' : 'signup');
                setError(null);
              }}
            >
              {signup ? 'Sign in' : 'Create an account'}
            </button>
          </p>
        ) : (
          <p class="switch">New here? Ask the operator of this service for an account.</p>
        )}
      </main>
    </div>
  );
}
