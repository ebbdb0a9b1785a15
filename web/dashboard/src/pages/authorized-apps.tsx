import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { AuthorizedApp, AuthorizedApps } from '@tollgate/wire';
import { api } from '../api.ts';
import type { FormFields } from '../field-errors.ts';
import {
  Card,
  Chips,
  announce,
  ConfirmButton,
  CreditsInput,
  Empty,
  ErrorNote,
  FieldMessage,
  LimitBar,
  PageHeader,
  useAction,
  useLoad,
} from '../components.tsx';
import { ago, counted, formatCredits, when } from '../format.ts';
import { loadUsage } from '../usage-data.ts';

const PERIODS = [
  ['daily', 'Daily'],
  ['weekly', 'Weekly'],
  ['monthly', 'Monthly'],
  ['total', 'Total'],
] as const;

/** The limits form's fields: the API names them `limits.daily` … in a refusal. */
const LIMIT_FIELDS: FormFields = Object.fromEntries(
  PERIODS.map(([period, label]) => [period, { label: `${label} limit`, api: [`limits.${period}`] }]),
);

/** The id of an app's limits form, which its "Change limits" button controls. */
const formId = (app: AuthorizedApp) => `limits-${app.clientId}`;

/**
 * An app's four limits, opened by its "Change limits" button: the first field takes the focus, and Save,
 * Cancel or Escape closes the form and gives the focus back to that button (else it fell to the page's start).
 * Save runs once however often it is pressed.
 */
function LimitsForm(props: { app: AuthorizedApp; onClose: (saved: boolean) => void }) {
  const action = useAction({ fields: LIMIT_FIELDS });
  const { busy, error, run, field } = action;
  const form = useRef<HTMLFormElement>(null);
  useLayoutEffect(() => form.current?.querySelector('input')?.focus(), []);
  const close = (saved: boolean) => {
    document.querySelector<HTMLElement>(`[aria-controls="${formId(props.app)}"]`)?.focus();
    props.onClose(saved);
  };
  async function submit(event: Event) {
    event.preventDefault();
    const data = new FormData(event.currentTarget as HTMLFormElement);
    const limits: Record<string, number | null> = {};
    for (const [period] of PERIODS) {
      const text = String(data.get(period) ?? '').trim();
      limits[period] = text === '' ? null : Number(text);
    }
    await run(async () => {
      await api('PATCH', `/api/user/authorized-apps/${encodeURIComponent(props.app.clientId)}`, { limits });
      close(true);
    });
  }
  return (
    <form
      class="limits-form"
      id={formId(props.app)}
      ref={form}
      onSubmit={submit}
      onKeyDown={(event) => event.key === 'Escape' && !busy && close(false)}
      aria-label={`Limits of ${props.app.name}`}
    >
      <div class="row">
        {PERIODS.map(([period, label]) => (
          <label key={period}>
            {label} limit (credits)
            <CreditsInput
              name={period}
              placeholder="No limit"
              defaultValue={props.app.limits[period]?.limit?.toString() ?? ''}
              {...field(period)}
            />
            <FieldMessage action={action} name={period} />
          </label>
        ))}
      </div>
      <ErrorNote error={error} />
      <div class="row-actions">
        <button class="btn primary" type="submit" disabled={busy}>
          Save limits
        </button>
        <button type="button" class="btn" onClick={() => close(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** The apps allowed to spend the user's credits: their scopes and limits, which the user can change or revoke. */
export function AuthorizedAppsPage() {
  const apps = useLoad(() => api<AuthorizedApps>('GET', '/api/user/authorized-apps'));
  // What each app spent: `GET /api/usage`'s byApp (last 30 days); the apps are shown without it if it fails.
  const usage = useLoad(() => loadUsage().catch(() => undefined));
  const spentBy = new Map((usage.data?.byApp ?? []).map((row) => [row.appId, row]));
  const [editing, setEditing] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  return (
    <>
      <PageHeader
        title="Authorized apps"
        lead="Apps you signed in to with Tollgate. Each spends your credits only within the limits you set here."
      />
      <ErrorNote error={apps.error ?? error} />
      {apps.data?.apps.length === 0 && (
        <Empty>No app is authorized. When you sign in to an app with Tollgate, it shows up here.</Empty>
      )}
      <div class="app-list">
        {(apps.data?.apps ?? []).map((app) => (
          <Card key={app.clientId} class="app-card" label={app.name}>
            <div class="app-head">
              <div>
                <h2>{app.name}</h2>
                <div class="muted small">
                  <code>{app.clientId}</code> · authorized {when(app.authorizedAt)} · last used {ago(app.lastUsedAt)}
                </div>
              </div>
              <div class="row-actions">
                <button
                  type="button"
                  class="btn small"
                  onClick={() => setEditing(editing === app.clientId ? null : app.clientId)}
                  aria-expanded={editing === app.clientId}
                  aria-controls={formId(app)}
                >
                  Change limits
                </button>
                <ConfirmButton
                  label="Revoke"
                  confirm="Revoke access"
                  subject={app.name}
                  confirmSubject={`of ${app.name}`}
                  onConfirm={async () => {
                    try {
                      await api('DELETE', `/api/user/authorized-apps/${encodeURIComponent(app.clientId)}`);
                      announce(`Access of ${app.name} revoked.`);
                      apps.reload();
                    } catch (e) {
                      setError((e as Error).message);
                    }
                  }}
                />
              </div>
            </div>
            <div class="scopes">
              <span class="muted small">Scopes</span> <Chips items={app.scopes} />
            </div>
            <p class="app-spent" data-testid="app-spent">
              <span class="muted small">Spent in the last 30 days</span>{' '}
              <strong>{usage.data ? `${formatCredits(spentBy.get(app.clientId)?.cost ?? 0)} credits` : '…'}</strong>
              {usage.data && (
                <span class="muted small">
                  {' '}
                  · {counted(spentBy.get(app.clientId)?.requests ?? 0, 'request')} ·{' '}
                  <a href="#/usage">usage by model</a>
                </span>
              )}
            </p>
            <div class="limits">
              {PERIODS.map(([period, label]) => (
                <LimitBar key={period} label={label} limit={app.limits[period]} />
              ))}
            </div>
            {editing === app.clientId && (
              <LimitsForm
                app={app}
                onClose={(saved) => {
                  setEditing(null);
                  if (saved) apps.reload();
                }}
              />
            )}
          </Card>
        ))}
      </div>
    </>
  );
}
