import { useLayoutEffect, useRef } from 'preact/hooks';
import { api } from '../api.ts';
import { ErrorNote, FieldMessage, useAction } from '../components.tsx';

/** An app of the user's own whose keys can be replaced (one that authenticates with `private_key_jwt`). */
export interface KeyPairApp {
  clientId: string;
  name: string;
}

/** The id of an app's key form, which its "Replace keys" button controls. */
export const keysFormId = (app: KeyPairApp) => `keys-${app.clientId}`;

/**
 * A pasted JWK Set, parsed. Only its JSON is checked here: what the keys may be is the server's to say, and its
 * 400 names the key and member it refuses.
 */
export function parsePublicKeys(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error('The public keys are not valid JSON: paste a JWK Set, { "keys": [ … ] }.');
  }
}

/**
 * A key-pair app's new public keys (`PUT /api/user/apps/:clientId/jwks`), opened by its "Replace keys" button:
 * the field takes the focus, and a save, Cancel or Escape closes the form and gives the focus back to that
 * button. What the server refuses stays in the form's alert, the pasted set kept for mending.
 */
export function ReplaceKeysForm(props: { app: KeyPairApp; onClose: (replaced: boolean) => void }) {
  const action = useAction({ fields: { jwks: { label: 'New public keys' } } });
  const { busy, error, run } = action;
  const form = useRef<HTMLFormElement>(null);
  useLayoutEffect(() => form.current?.querySelector('textarea')?.focus(), []);
  const id = keysFormId(props.app);
  const close = (replaced: boolean) => {
    document.querySelector<HTMLElement>(`[aria-controls="${id}"]`)?.focus();
    props.onClose(replaced);
  };
  async function submit(event: Event) {
    event.preventDefault();
    const text = String(new FormData(event.currentTarget as HTMLFormElement).get('jwks') ?? '');
    await run(async () => {
      if (!text.trim()) throw new Error('Paste the new JWK Set, { "keys": [ … ] }.');
      const jwks = parsePublicKeys(text);
      await api('PUT', `/api/user/apps/${encodeURIComponent(props.app.clientId)}/jwks`, { jwks });
      close(true);
    });
  }
  return (
    <form
      class="form-grid keys-form"
      id={id}
      ref={form}
      onSubmit={submit}
      onKeyDown={(event) => event.key === 'Escape' && !busy && close(false)}
      aria-label={`Public keys of ${props.app.name}`}
    >
      <label>
        <span id={`${id}-label`}>New public keys for “{props.app.name}”</span>
        <textarea
          name="jwks"
          rows={4}
          placeholder='{ "keys": [ { "kty": "EC", "crv": "P-256", "x": "…", "y": "…", "kid": "key-2" } ] }'
          aria-labelledby={`${id}-label`}
          {...action.field('jwks', `${id}-hint`)}
        />
        <span class="muted small" id={`${id}-hint`}>
          They replace all of the app's keys: its next token request is checked against them. To switch without a
          refused request, paste the old and the new key together, move your server to the new key, then paste the new
          one alone.
        </span>
        <FieldMessage action={action} name="jwks" />
      </label>
      <ErrorNote error={error} />
      <div class="row-actions">
        <button class="btn primary" type="submit" disabled={busy}>
          Save keys
        </button>
        <button type="button" class="btn" onClick={() => close(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}
