import { render } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import './styles.css';
import { api, onSessionEnded, setCsrfToken } from './api.ts';
import { AuthPage } from './pages/auth.tsx';
import { WalletPage } from './pages/wallet.tsx';
import { UsagePage } from './pages/usage.tsx';
import { KeysPage } from './pages/keys.tsx';
import { AuthorizedAppsPage } from './pages/authorized-apps.tsx';
import { DeveloperAppsPage } from './pages/developer-apps.tsx';
import { WebhooksPage } from './pages/webhooks.tsx';

/** The signed-in user, as `GET /api/auth/session` gives it. */
export interface SessionUser {
  id: string;
  email: string;
  name: string;
}

/** `GET /api/auth/state`: whether this browser is signed in, and whether anyone may sign up here. */
type AuthState = ({ signedIn: true; user: SessionUser; csrfToken: string } | { signedIn: false }) & {
  signUp: 'open' | 'closed';
};

/** Small line icons (24×24 paths), drawn inline so they look the same everywhere. */
const ICONS = {
  wallet: 'M3 7h15a3 3 0 0 1 3 3v7a3 3 0 0 1-3 3H6a3 3 0 0 1-3-3zm0 0 2-3h11v3M16 13.5h2',
  usage: 'M4 20V10M10 20V4M16 20v-7M22 20H2',
  keys: 'M14 10a4 4 0 1 1-1.2-2.8L21 15v3h-3v-2h-2v-2h-2z',
  apps: 'M12 3 4 6v6c0 5 3.5 8 8 9 4.5-1 8-4 8-9V6zM9 12l2 2 4-4',
  developer: 'M8 8l-4 4 4 4M16 8l4 4-4 4M13.5 5l-3 14',
  webhooks: 'M6 16a3 3 0 1 0 3 3h7M18 16a3 3 0 1 0-2.6-4.5L12 5.5M9.5 7.5A3 3 0 1 0 6 12.5L9 18',
} as const;

const ROUTES = [
  { path: 'wallet', label: 'Wallet', icon: ICONS.wallet, page: WalletPage },
  { path: 'usage', label: 'Usage', icon: ICONS.usage, page: UsagePage },
  { path: 'keys', label: 'API keys', icon: ICONS.keys, page: KeysPage },
  { path: 'apps', label: 'Authorized apps', icon: ICONS.apps, page: AuthorizedAppsPage },
  { path: 'developer', label: 'Developer apps', icon: ICONS.developer, page: DeveloperAppsPage },
  { path: 'webhooks', label: 'Webhooks', icon: ICONS.webhooks, page: WebhooksPage },
] as const;

function currentRoute(): string {
  const path = location.hash.replace(/^#\/?/, '').split('?')[0];
  return ROUTES.some((r) => r.path === path) ? path : 'wallet';
}

const THEME_KEY = 'tollgate:theme';
const systemDark = () => matchMedia('(prefers-color-scheme: dark)');
const systemTheme = () => (systemDark().matches ? 'dark' : 'light');

/**
 * Light or dark: the system's, followed live, until the user picks one with the button; only that pick is
 * stored. Picking the system's own theme stores nothing, so the page follows the system again from there.
 */
function useTheme(): [string, () => void] {
  const [chosen, setChosen] = useState<string | null>(() => localStorage.getItem(THEME_KEY));
  const [system, setSystem] = useState(systemTheme);
  useEffect(() => {
    const media = systemDark();
    const onChange = () => setSystem(systemTheme());
    media.addEventListener('change', onChange);
    return () => media.removeEventListener('change', onChange);
  }, []);
  const theme = chosen ?? system;
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);
  const toggle = () => {
    const next = theme === 'dark' ? 'light' : 'dark';
    if (next === systemTheme()) localStorage.removeItem(THEME_KEY);
    else localStorage.setItem(THEME_KEY, next);
    setChosen(next === systemTheme() ? null : next);
  };
  return [theme, toggle];
}

function App() {
  const [user, setUser] = useState<SessionUser | null | undefined>(undefined);
  const [route, setRoute] = useState(currentRoute);
  const [theme, toggleTheme] = useTheme();
  // Why the sign-in page is back, when the session ended by itself rather than by "Sign out".
  const [notice, setNotice] = useState<string | null>(null);
  // Whether the sign-in page offers to create an account (the operator may close sign-up: SIGNUP=closed).
  const [signUpOpen, setSignUpOpen] = useState(true);

  useEffect(() => {
    // The page (its hash) stays, so signing in again goes back to it.
    onSessionEnded(() => {
      setCsrfToken('');
      setUser(null);
      setNotice('Your session has ended. Sign in again to go on.');
    });
    // The state, not `/api/auth/session`: signed out is a 200 there, where a 401 is a console error in every browser.
    api<AuthState>('GET', '/api/auth/state').then(
      (state) => {
        setSignUpOpen(state.signUp !== 'closed');
        if (!state.signedIn) return setUser(null);
        setCsrfToken(state.csrfToken);
        setUser(state.user);
      },
      () => setUser(null),
    );
    const onHash = () => setRoute(currentRoute());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);

  // A page chosen in the menu (or by a link) takes the focus, so that Tab goes on into it rather than through
  // the rest of the menu and the top bar; the first page shown leaves the focus where the browser put it.
  // It opens at its top: scrolled to by focus(), its title would sit under the sticky top bar.
  const shownRoute = useRef(route);
  useLayoutEffect(() => {
    if (route === shownRoute.current) return;
    shownRoute.current = route;
    document.getElementById('content')?.focus({ preventScroll: true });
    scrollTo(0, 0);
  }, [route]);

  useEffect(() => {
    const label = ROUTES.find((r) => r.path === route)?.label;
    document.title = user && label ? `${label} · Tollgate` : 'Tollgate';
  }, [route, user]);

  const themeButton = (
    <button
      type="button"
      class="btn ghost theme-toggle"
      onClick={toggleTheme}
      aria-label={`Switch to ${theme === 'dark' ? 'light' : 'dark'} mode`}
      title="Light or dark"
    >
      {theme === 'dark' ? '☀' : '☾'}
    </button>
  );

  if (user === undefined)
    return (
      <div class="splash" aria-busy="true">
        Loading…
      </div>
    );
  if (user === null) {
    return (
      <AuthPage
        themeButton={themeButton}
        notice={notice}
        signUpOpen={signUpOpen}
        onSignedIn={(session) => {
          setCsrfToken(session.csrfToken);
          setNotice(null);
          setUser(session.user);
        }}
      />
    );
  }

  const Page = ROUTES.find((r) => r.path === route)!.page;
  return (
    <div class="shell">
      <aside class="sidebar">
        <a class="brand" href="#/wallet">
          <span class="logo" aria-hidden="true">
            T
          </span>
          Tollgate
        </a>
        <nav aria-label="Dashboard">
          {ROUTES.map((r) => (
            <a
              key={r.path}
              href={`#/${r.path}`}
              class={r.path === route ? 'active' : ''}
              aria-current={r.path === route ? 'page' : undefined}
            >
              <svg class="nav-icon" viewBox="0 0 24 24" aria-hidden="true">
                <path d={r.icon} />
              </svg>
              {r.label}
            </a>
          ))}
        </nav>
        <div class="sidebar-foot">
          <a href="/docs" target="_blank" rel="noopener">
            API reference ↗
          </a>
          <a href="/demo/" target="_blank" rel="noopener">
            Demo app ↗
          </a>
        </div>
      </aside>
      <div class="main">
        <header class="topbar">
          <span class="who" title={user.email}>
            {user.name || user.email}
            <span class="muted"> · {user.email}</span>
          </span>
          {themeButton}
          <button
            type="button"
            class="btn small"
            onClick={async () => {
              await api('POST', '/api/auth/signout').catch(() => {});
              setCsrfToken('');
              setUser(null);
            }}
          >
            Sign out
          </button>
        </header>
        <main id="content" tabIndex={-1}>
          <Page />
        </main>
      </div>
    </div>
  );
}

render(<App />, document.getElementById('app')!);
