import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { ApiKeyCreated, ApiKeyList, CreatedApiKey } from '@tollgate/wire';
import { api } from '../api.ts';
import type { FormFields } from '../field-errors.ts';
import {
  Card,
  Chips,
  announce,
  ConfirmButton,
  CopyButton,
  SecretNotice,
  CreditsInput,
  Empty,
  ErrorNote,
  FieldMessage,
  PageHeader,
  SpendMeter,
  useAction,
  useLoad,
  TableBox,
} from '../components.tsx';
import { ago, counted, formatCredits, resetsIn, when } from '../format.ts';

/** A key limit's periods as its forms offer them, the API's default (`total`) first. */
const PERIOD_OPTIONS = (
  <>
    <option value="total">Total (never resets)</option>
    <option value="daily">Daily</option>
    <option value="weekly">Weekly (from Monday)</option>
    <option value="monthly">Monthly</option>
  </>
);

/** A key limit's period as its meter names it. */
const PERIOD_LABELS = { daily: 'Daily', weekly: 'Weekly', monthly: 'Monthly', total: 'Total' } as const;

/**
 * A key's limit in its table cell: the limit and period as before, a thin meter of the period's spend under it, and
 * what is spent, what running calls hold and when it resets in small type that wraps to the cell's width.
 */
function KeyLimit(props: {
  limit: number;
  period: keyof typeof PERIOD_LABELS;
  usage: NonNullable<ApiKeyList['apiKeys'][number]['limitUsage']>;
}) {
  const { usage } = props;
  const reset = resetsIn(usage.resetsAt);
  return (
    <div>
      <span class="nowrap">
        {formatCredits(props.limit)} / {props.period}
      </span>
      <SpendMeter label={PERIOD_LABELS[props.period]} limit={{ limit: props.limit, ...usage }} />
      <div class="muted key-limit-foot">
        {formatCredits(usage.spent)} spent
        {usage.reserved > 0 ? ` · ${formatCredits(usage.reserved)} held` : ''} · {reset ?? 'never resets'}
      </div>
    </div>
  );
}
import { loadUsage } from '../usage-data.ts';

type ListedKey = ApiKeyList['apiKeys'][number];

/** The id of a key's limit form, which its "Change limit" button controls. */
const limitFormId = (key: ListedKey) => `key-limit-${key.id}`;

/** The limit form's fields, as the API names them in a refusal. */
const LIMIT_FORM_FIELDS: FormFields = { limit: { label: 'Spending limit', api: ['limit', 'limitPeriod'] } };

/**
 * A key's spending limit, changed in place (`PATCH /api/user/api-keys/:id`), opened by its "Change limit" button:
 * the amount takes the focus, and Save, Cancel or Escape close the form and give the focus back to that button. An
 * empty amount removes the limit.
 */
function KeyLimitForm(props: { apiKey: ListedKey; onClose: (saved: boolean) => void }) {
  const action = useAction({ fields: LIMIT_FORM_FIELDS });
  const { busy, error, run, field } = action;
  const [period, setPeriod] = useState(props.apiKey.limitPeriod ?? 'total');
  const form = useRef<HTMLFormElement>(null);
  useLayoutEffect(() => form.current?.querySelector('input')?.focus(), []);
  const close = (saved: boolean) => {
    document.querySelector<HTMLElement>(`[aria-controls="${limitFormId(props.apiKey)}"]`)?.focus();
    props.onClose(saved);
  };
  async function submit(event: Event) {
    event.preventDefault();
    const text = String(new FormData(event.currentTarget as HTMLFormElement).get('limit') ?? '').trim();
    const body = text === '' ? { limit: null } : { limit: Number(text), limitPeriod: period };
    await run(async () => {
      await api('PATCH', `/api/user/api-keys/${encodeURIComponent(props.apiKey.id)}`, body);
      announce(text === '' ? `Key ${props.apiKey.name} has no limit now.` : `Limit of key ${props.apiKey.name} saved.`);
      close(true);
    });
  }
  return (
    <form
      class="limits-form key-limit-form"
      id={limitFormId(props.apiKey)}
      ref={form}
      onSubmit={submit}
      onKeyDown={(event) => event.key === 'Escape' && !busy && close(false)}
      aria-label={`Limit of key ${props.apiKey.name}`}
    >
      <label>
        Spending limit (credits)
        <CreditsInput
          name="limit"
          placeholder="No limit"
          defaultValue={props.apiKey.limit?.toString() ?? ''}
          {...field('limit')}
        />
        <FieldMessage action={action} name="limit" />
      </label>
      <label>
        Period
        <select name="limitPeriod" value={period} onChange={(e) => setPeriod(e.currentTarget.value as typeof period)}>
          {PERIOD_OPTIONS}
        </select>
      </label>
      <ErrorNote error={error} />
      <div class="row-actions">
        <button class="btn primary small" type="submit" disabled={busy}>
          Save limit
        </button>
        <button type="button" class="btn small" onClick={() => close(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** Contract §5.3, with what each grants. */
const PERMISSIONS: Array<[string, string]> = [
  ['ai:chat', 'Chat completions'],
  ['ai:completions', 'Completions'],
  ['ai:models', 'List models'],
  ['ai:images', 'Images'],
  ['ai:embeddings', 'Embeddings'],
  ['ai:audio', 'Speech, transcription, realtime'],
  ['billing:read', 'View credits and usage'],
];

const DAY_MS = 86_400_000;

/**
 * The `expiresAt` the form asks for: none for "never", N days from now, or the end of the chosen day (the key
 * works through that day, in the reader's time zone). The server takes an absolute time only.
 */
function expiryOf(form: FormData, now = Date.now()): string | null {
  const choice = String(form.get('expires') ?? 'never');
  if (choice === 'never') return null;
  if (choice === 'date') {
    const [year, month, day] = String(form.get('expiresOn') ?? '')
      .split('-')
      .map(Number);
    if (!year || !month || !day) return null;
    return new Date(year, month - 1, day + 1).toISOString();
  }
  return new Date(now + Number(choice) * DAY_MS).toISOString();
}

/** `YYYY-MM-DD` of a day in the reader's time zone, for a date input's `min`. */
function localDay(ms: number): string {
  const date = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

/** A day in the reader's locale (`Mar 31, 2030`): the list's dates, with the time on hover ({@link when}). */
function dayOf(iso: string): string {
  return new Date(iso).toLocaleDateString(undefined, { dateStyle: 'medium' });
}

/**
 * The list's date of an expiry: the last day the key works. One that falls at a local midnight is the end of the
 * day before (the form's "last day the key works" is stored as the next day's first instant), so it lists as the
 * day the user chose, as GitHub lists a token's expiry; the exact instant is on hover.
 */
function expiryDay(iso: string): string {
  const at = new Date(iso);
  const midnight = at.getHours() === 0 && at.getMinutes() === 0 && at.getSeconds() === 0 && at.getMilliseconds() === 0;
  if (!midnight) return dayOf(iso);
  return dayOf(new Date(at.getFullYear(), at.getMonth(), at.getDate() - 1).toISOString());
}

/** A key's expiry as the list shows it: "Never", its date, or "Expired" (with when, on hover). */
function Expiry(props: { expiresAt: string | null }) {
  if (props.expiresAt === null) return <span class="muted">Never</span>;
  if (Date.parse(props.expiresAt) <= Date.now()) {
    return (
      <span class="chip expired" title={`Expired ${when(props.expiresAt)}`}>
        Expired
      </span>
    );
  }
  return <span title={`Stops working ${when(props.expiresAt)}`}>{expiryDay(props.expiresAt)}</span>;
}

/**
 * The `models` the form asks for: the ids and `vendor/*` wildcards typed, split at commas (or spaces), each once;
 * none typed is none sent (every model). The server checks each entry's shape and names a bad one.
 */
function modelsOf(form: FormData): string[] {
  const typed = String(form.get('models') ?? '')
    .split(/[\s,]+/)
    .filter((entry) => entry !== '');
  return [...new Set(typed)];
}

/**
 * A key's models, under its permissions (a column of their own would not fit a laptop): "All models" for a key
 * that may call every model, else each id or wildcard.
 */
function KeyModels(props: { models: string[] | null }) {
  return (
    <div class="key-models small" data-testid="key-models">
      {props.models === null ? (
        <span class="muted">All models</span>
      ) : (
        <>
          <span class="muted">Models:</span> <Chips items={props.models} />
        </>
      )}
    </div>
  );
}

function masked(key: string): string {
  return key.length > 12 ? `${key.slice(0, 7)}…${key.slice(-4)}` : key;
}

/** The create form's fields, as the API names them in a refusal. */
const KEY_FIELDS: FormFields = {
  name: { label: 'Name' },
  permissions: { label: 'Permissions', mentions: /permission/i },
  limit: { label: 'Spending limit', api: ['limit', 'limitPeriod'] },
  expires: { label: 'Expires', api: ['expiresAt'] },
  models: { label: 'Models' },
};

function CreateKey(props: { onCreated: (key: CreatedApiKey) => void }) {
  const action = useAction({ fields: KEY_FIELDS });
  const { busy, error, run, field } = action;
  const [expires, setExpires] = useState('never');
  async function submit(event: Event) {
    event.preventDefault();
    const formElement = event.currentTarget as HTMLFormElement;
    const form = new FormData(formElement);
    const limitText = String(form.get('limit') ?? '').trim();
    const body: Record<string, unknown> = {
      name: String(form.get('name') ?? '').trim(),
      permissions: form.getAll('permissions'),
    };
    if (limitText) {
      body.limit = Number(limitText);
      body.limitPeriod = form.get('limitPeriod');
    }
    const expiresAt = expiryOf(form);
    if (expiresAt) body.expiresAt = expiresAt;
    const models = modelsOf(form);
    if (models.length > 0) body.models = models;
    await run(async () => {
      const created = await api<ApiKeyCreated>('POST', '/api/user/api-keys', body);
      formElement.reset();
      setExpires('never');
      props.onCreated(created.apiKey);
    });
  }
  return (
    <form class="form-grid" onSubmit={submit} aria-label="Create an API key">
      <label>
        Name
        <input name="name" placeholder="e.g. Laptop scripts" required maxLength={100} {...field('name')} />
        <FieldMessage action={action} name="name" />
      </label>
      <fieldset>
        <legend>Permissions</legend>
        <div class="checks">
          {PERMISSIONS.map(([value, text]) => (
            <label class="check" key={value}>
              <input
                type="checkbox"
                name="permissions"
                value={value}
                defaultChecked={value === 'ai:chat'}
                {...field('permissions')}
              />
              <span>
                <code>{value}</code> <span class="muted">{text}</span>
              </span>
            </label>
          ))}
        </div>
        <FieldMessage action={action} name="permissions" />
      </fieldset>
      <div class="row">
        <label>
          Spending limit (credits, optional)
          <CreditsInput name="limit" placeholder="No limit" {...field('limit')} />
          <FieldMessage action={action} name="limit" />
        </label>
        <label>
          Period
          {/* Total first, the API's default: Preact's `selected` sets no attribute, so the form's reset() after a
              key is created went back to the first option, and the next limit typed became a daily one. */}
          <select name="limitPeriod">{PERIOD_OPTIONS}</select>
        </label>
      </div>
      <div class="row">
        <label>
          Expires
          <select
            name="expires"
            value={expires}
            onChange={(e) => setExpires(e.currentTarget.value)}
            {...field('expires')}
          >
            <option value="never">Never</option>
            <option value="7">In 7 days</option>
            <option value="30">In 30 days</option>
            <option value="90">In 90 days</option>
            <option value="date">On a date…</option>
          </select>
          <FieldMessage action={action} name="expires" />
        </label>
        {expires === 'date' && (
          <label>
            Last day the key works
            <input name="expiresOn" type="date" required min={localDay(Date.now())} />
          </label>
        )}
      </div>
      <label>
        <span id="key-models-label">Models (optional)</span>
        <input
          name="models"
          placeholder="All models"
          autoComplete="off"
          spellcheck={false}
          aria-labelledby="key-models-label"
          {...field('models', 'key-models-hint')}
        />
        <span class="muted small" id="key-models-hint">
          Model ids or vendor wildcards, separated by commas (<code>openai/gpt-4o-mini, anthropic/*</code>): the key may
          call only these. Empty: every model.
        </span>
        <FieldMessage action={action} name="models" />
      </label>
      <ErrorNote error={error} />
      <div>
        <button class="btn primary" type="submit" disabled={busy}>
          Create key
        </button>
      </div>
    </form>
  );
}

/** Create, copy and revoke API keys; see when each was last used. */
export function KeysPage() {
  const keys = useLoad(() => api<ApiKeyList>('GET', '/api/user/api-keys'));
  // What each key spent: `GET /api/usage`'s byKey (last 30 days); the keys table is shown without it if it fails.
  const usage = useLoad(() => loadUsage().catch(() => undefined));
  const spentBy = new Map((usage.data?.byKey ?? []).map((row) => [row.keyId, row]));
  const [created, setCreated] = useState<CreatedApiKey | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  return (
    <>
      <PageHeader
        title="API keys"
        lead="Keys call the OpenAI-compatible API at /api/v1 with your credits. Give each its own permissions, models, limit and expiry."
      />
      {created && (
        <SecretNotice key={created.key}>
          <div>
            <strong>Key “{created.name}” created.</strong> Copy it now and keep it somewhere safe.
          </div>
          <div class="secret">
            <code data-testid="new-key">{created.key}</code>
            <CopyButton value={created.key} />
          </div>
        </SecretNotice>
      )}
      <Card title="New key">
        <CreateKey
          onCreated={(key) => {
            setCreated(key);
            keys.reload();
          }}
        />
      </Card>
      <Card title="Your keys" list>
        <ErrorNote error={keys.error ?? error} />
        {keys.data?.apiKeys.length === 0 ? (
          <Empty>No keys yet. Create one above.</Empty>
        ) : (
          <TableBox>
            <table class="stack">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Key</th>
                  <th>Permissions</th>
                  <th>Limit</th>
                  <th>Expires</th>
                  <th class="num">Spent, 30 days</th>
                  <th>
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {(keys.data?.apiKeys ?? []).map((k) => (
                  <tr key={k.id} data-key-id={k.id}>
                    {/* When it was last used and created sit under its name, not in columns of their own: the list
                        then keeps its columns on a laptop (it was wider than its box at 1280 px). */}
                    <td data-label="Name" class="key-name">
                      <strong>{k.name}</strong>
                      <div class="muted small">
                        <span title={k.lastUsed ? when(k.lastUsed) : undefined} data-testid="key-last-used">
                          {k.lastUsed ? `Used ${ago(k.lastUsed)}` : 'Never used'}
                        </span>
                        {' · '}
                        <span title={when(k.createdAt)} class="nowrap">
                          created {dayOf(k.createdAt)}
                        </span>
                      </div>
                    </td>
                    <td data-label="Key" class="nowrap">
                      <code title="Use Copy for the whole key">{masked(k.key)}</code>{' '}
                      <CopyButton value={k.key} subject={`key ${k.name}`} />
                    </td>
                    <td data-label="Permissions">
                      <div>
                        <Chips items={k.permissions} />
                        <KeyModels models={k.models} />
                      </div>
                    </td>
                    <td data-label="Limit" class="key-limit" data-testid="key-limit">
                      {editing === k.id ? (
                        <KeyLimitForm
                          apiKey={k}
                          onClose={(saved) => {
                            setEditing(null);
                            if (saved) keys.reload();
                          }}
                        />
                      ) : k.limit === null || k.limitUsage === null ? (
                        <span class="muted">None</span>
                      ) : (
                        <KeyLimit limit={k.limit} period={k.limitPeriod ?? 'total'} usage={k.limitUsage} />
                      )}
                      <button
                        type="button"
                        class="link small key-limit-change"
                        onClick={() => setEditing(editing === k.id ? null : k.id)}
                        aria-expanded={editing === k.id}
                        aria-controls={limitFormId(k)}
                      >
                        Change limit
                      </button>
                    </td>
                    <td data-label="Expires" class="nowrap" data-testid="key-expires">
                      <Expiry expiresAt={k.expiresAt} />
                    </td>
                    <td
                      data-label="Spent, 30 days"
                      class="num nowrap"
                      data-testid="key-spent"
                      title={spentBy.has(k.id) ? counted(spentBy.get(k.id)!.requests, 'request') : undefined}
                    >
                      {usage.data ? formatCredits(spentBy.get(k.id)?.cost ?? 0) : '…'}
                    </td>
                    <td class="actions-cell">
                      <ConfirmButton
                        label="Revoke"
                        confirm="Revoke key"
                        subject={`key ${k.name}`}
                        confirmSubject={k.name}
                        onConfirm={async () => {
                          try {
                            await api('DELETE', `/api/user/api-keys/${encodeURIComponent(k.id)}`);
                            if (created?.id === k.id) setCreated(null);
                            announce(`Key ${k.name} revoked.`);
                            keys.reload();
                          } catch (e) {
                            setError((e as Error).message);
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
      </Card>
    </>
  );
}
