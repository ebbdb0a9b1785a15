import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import type { FormFields } from '../field-errors.ts';
import {
  Card,
  Chips,
  announce,
  ConfirmButton,
  CopyButton,
  SecretNotice,
  Empty,
  ErrorNote,
  FieldMessage,
  PageHeader,
  useAction,
  useLoad,
  TableBox,
} from '../components.tsx';
import { when } from '../format.ts';
import { keysFormId, parsePublicKeys, ReplaceKeysForm } from './replace-app-keys.tsx';

interface OwnedApp {
  clientId: string;
  name: string;
  type: 'public' | 'confidential';
  /** `private_key_jwt`: a confidential app that signs client assertions with a key pair instead of a secret. */
  tokenEndpointAuthMethod: 'none' | 'client_secret_basic' | 'private_key_jwt';
  redirectUris: string[];
  scopes: string[];
  createdAt: string;
}

const SCOPES: Array<[string, string, boolean]> = [
  ['read', 'Read the profile and authorized apps', true],
  ['billing:read', 'Read credits and usage', true],
  ['ai:chat', 'Chat completions', true],
  ['offline_access', 'Stay signed in (refresh tokens)', true],
  ['ai:completions', 'Completions', false],
  ['ai:models', 'List models', false],
  ['ai:images', 'Images', false],
  ['ai:embeddings', 'Embeddings', false],
  ['ai:audio', 'Audio', false],
  ['apikeys:read', 'List the API keys it created', false],
  ['apikeys:write', 'Create, change and revoke API keys', false],
  ['write', 'Change settings', false],
  ['openid', 'Sign in with Tollgate (ID token)', false],
  ['profile', 'Name and picture (with openid)', false],
  ['email', 'Email address (with openid)', false],
];

/**
 * How the server matches a redirect URI, as its `OAUTH_LOOPBACK_ANY_PORT` says (from `GET /api/user/apps`): a
 * native app that listens on a port the system picks must know whether to register one port or none.
 */
function redirectMatching(loopbackAnyPort: boolean): string {
  return loopbackAnyPort
    ? 'Matched exactly, except an http one on 127.0.0.1 or [::1], which matches on any port (for apps that listen on a port the system picks).'
    : 'Matched exactly: scheme, host, port, path and trailing slash.';
}

/**
 * The JWK Set pasted for a confidential app (`private_key_jwt`), or undefined when the field is empty (the app
 * then gets a secret). The server checks the keys themselves and names what it refuses.
 */
function publicKeysOf(type: string, text: string): unknown {
  if (!text.trim()) return undefined;
  if (type !== 'confidential')
    throw new Error('Public keys are for a confidential app: choose Confidential or clear them.');
  return parsePublicKeys(text);
}

/** The register form's fields; a refused redirect URI is named in the sentence ("The redirect URI …"), not by path. */
const APP_FIELDS: FormFields = {
  name: { label: 'App name' },
  redirectUris: { label: 'Redirect URIs', mentions: /redirect URI/i },
  jwks: { label: 'Public keys' },
  scopes: { label: 'Scopes', mentions: /\bscope/i },
};

/** Register OAuth clients (apps) whose users pay with their own Tollgate credits. The secret is shown once. */
export function DeveloperAppsPage() {
  const apps = useLoad(() => api<{ apps: OwnedApp[]; loopbackAnyPort: boolean }>('GET', '/api/user/apps'));
  const [created, setCreated] = useState<{ clientId: string; clientSecret?: string; name: string } | null>(null);
  const action = useAction({ fields: APP_FIELDS });
  const { busy, error, run, field } = action;
  const [deleteError, setDeleteError] = useState<string | null>(null);
  // The key-pair app whose keys are being replaced, and the name of the one whose keys were just replaced.
  const [replacing, setReplacing] = useState<OwnedApp | null>(null);
  const [keysReplaced, setKeysReplaced] = useState<string | null>(null);

  async function submit(event: Event) {
    event.preventDefault();
    const formElement = event.currentTarget as HTMLFormElement;
    const form = new FormData(formElement);
    const name = String(form.get('name') ?? '').trim();
    const body = {
      name,
      redirectUris: String(form.get('redirectUris') ?? '')
        .split(/\s+/)
        .filter(Boolean),
      type: String(form.get('type')),
      scopes: form.getAll('scopes').map(String),
    };
    await run(async () => {
      const jwks = publicKeysOf(body.type, String(form.get('jwks') ?? ''));
      const result = await api<{ clientId: string; clientSecret?: string }>('POST', '/api/user/apps', {
        ...body,
        ...(jwks === undefined ? {} : { jwks }),
      });
      setCreated({ ...result, name });
      formElement.reset();
      apps.reload();
    });
  }

  return (
    <>
      <PageHeader
        title="Developer apps"
        lead="Register an app to let its users sign in with Tollgate and pay for AI with their own credits, under limits they choose."
      />
      {created && (
        <SecretNotice key={created.clientId}>
          <div>
            <strong>“{created.name}” registered.</strong> Client ID{' '}
            <code data-testid="new-client-id">{created.clientId}</code> <CopyButton value={created.clientId} />
          </div>
          {created.clientSecret && (
            <div class="secret">
              <span>Client secret — shown only now:</span>
              <code data-testid="new-client-secret">{created.clientSecret}</code>
              <CopyButton value={created.clientSecret} />
            </div>
          )}
        </SecretNotice>
      )}
      <Card title="Register an app">
        <form class="form-grid" onSubmit={submit} aria-label="Register an app">
          <label>
            App name
            <input name="name" required maxLength={100} placeholder="e.g. My chat app" {...field('name')} />
            <FieldMessage action={action} name="name" />
          </label>
          <label>
            <span id="redirect-uris-label">Redirect URIs (one per line)</span>
            <textarea
              name="redirectUris"
              rows={2}
              required
              placeholder="https://myapp.example.com/callback"
              aria-labelledby="redirect-uris-label"
              {...field('redirectUris', apps.data ? 'redirect-uris-hint' : undefined)}
            />
            {apps.data && (
              <span class="muted small" id="redirect-uris-hint">
                {redirectMatching(apps.data.loopbackAnyPort)}
              </span>
            )}
            <FieldMessage action={action} name="redirectUris" />
          </label>
          <fieldset>
            <legend>Client type</legend>
            <div class="checks">
              <label class="check">
                <input type="radio" name="type" value="public" defaultChecked />
                <span>
                  Public <span class="muted">— runs in the browser or on a device; uses PKCE, no secret</span>
                </span>
              </label>
              <label class="check">
                <input type="radio" name="type" value="confidential" />
                <span>
                  Confidential <span class="muted">— has a server that keeps a client secret or a private key</span>
                </span>
              </label>
            </div>
          </fieldset>
          <label>
            <span id="jwks-label">Public keys (optional, confidential apps)</span>
            <textarea
              name="jwks"
              rows={3}
              placeholder='{ "keys": [ { "kty": "EC", "crv": "P-256", "x": "…", "y": "…", "kid": "key-1" } ] }'
              aria-labelledby="jwks-label"
              {...field('jwks', 'jwks-hint')}
            />
            <span class="muted small" id="jwks-hint">
              A JWK Set of your server's public keys: it then signs its token requests with its private key
              (private_key_jwt) and gets no secret. Public keys only; leave empty for a client secret.
            </span>
            <FieldMessage action={action} name="jwks" />
          </label>
          <fieldset>
            <legend>Scopes it may ask for</legend>
            <div class="checks two">
              {SCOPES.map(([scope, text, checked]) => (
                <label class="check" key={scope}>
                  <input type="checkbox" name="scopes" value={scope} defaultChecked={checked} {...field('scopes')} />
                  <span>
                    <code>{scope}</code> <span class="muted">{text}</span>
                  </span>
                </label>
              ))}
            </div>
            <FieldMessage action={action} name="scopes" />
          </fieldset>
          <ErrorNote error={error} />
          <div>
            <button class="btn primary" type="submit" disabled={busy}>
              Register app
            </button>
          </div>
        </form>
      </Card>
      <Card title="Your apps" list>
        <ErrorNote error={apps.error ?? deleteError} />
        {keysReplaced && (
          <div class="notice success" role="status">
            <strong>Keys of “{keysReplaced}” replaced.</strong> Its next token request is checked against them.
          </div>
        )}
        {!apps.data ? null : apps.data.apps.length === 0 ? (
          <Empty>You have not registered an app yet.</Empty>
        ) : (
          <TableBox>
            <table class="stack">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Client ID</th>
                  <th>Type</th>
                  <th>Redirect URIs</th>
                  <th>Scopes</th>
                  <th>
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {apps.data.apps.map((app) => (
                  <tr key={app.clientId}>
                    {/* Its creation under its name, not in a column of its own: the list keeps its columns longer. */}
                    <td data-label="Name">
                      <strong>{app.name}</strong>
                      <div class="muted small">Created {when(app.createdAt)}</div>
                    </td>
                    <td data-label="Client ID" class="nowrap">
                      <code>{app.clientId}</code>{' '}
                      <CopyButton value={app.clientId} subject={`client ID of ${app.name}`} />
                    </td>
                    <td data-label="Type">
                      {app.type}
                      {app.tokenEndpointAuthMethod === 'private_key_jwt' && <span class="muted"> (key pair)</span>}
                    </td>
                    <td data-label="Redirect URIs" class="uris">
                      {app.redirectUris.map((uri) => (
                        <div key={uri}>
                          <code>{uri}</code>
                        </div>
                      ))}
                    </td>
                    <td data-label="Scopes">
                      <Chips items={app.scopes} />
                    </td>
                    <td class="actions-cell">
                      {app.tokenEndpointAuthMethod === 'private_key_jwt' && (
                        <button
                          type="button"
                          class="btn small"
                          onClick={() => {
                            setKeysReplaced(null);
                            setReplacing(replacing?.clientId === app.clientId ? null : app);
                          }}
                          aria-expanded={replacing?.clientId === app.clientId}
                          aria-controls={keysFormId(app)}
                        >
                          Replace keys
                        </button>
                      )}{' '}
                      {/* The only way out of the cap of 20 apps, whose refusal says "delete one first". */}
                      <ConfirmButton
                        label="Delete"
                        confirm="Delete app"
                        subject={`app ${app.name}`}
                        confirmSubject={app.name}
                        onConfirm={async () => {
                          setDeleteError(null);
                          try {
                            await api('DELETE', `/api/user/apps/${encodeURIComponent(app.clientId)}`);
                            if (created?.clientId === app.clientId) setCreated(null);
                            announce(`App ${app.name} deleted.`);
                            if (replacing?.clientId === app.clientId) setReplacing(null);
                            apps.reload();
                          } catch (e) {
                            setDeleteError((e as Error).message);
                          }
                        }}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableBox>
        )}
        {replacing && (
          <ReplaceKeysForm
            key={replacing.clientId}
            app={replacing}
            onClose={(replaced) => {
              if (replaced) setKeysReplaced(replacing.name);
              setReplacing(null);
            }}
          />
        )}
      </Card>
    </>
  );
}
