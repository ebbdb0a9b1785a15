import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import type { FormFields } from '../field-errors.ts';
import {
  Card,
  Chips,
  announce,
  ConfirmButton,
  CopyButton,
  CreditsInput,
  Empty,
  ErrorNote,
  FieldMessage,
  PageHeader,
  useAction,
  useLoad,
  TableBox,
} from '../components.tsx';
import { formatCredits, when } from '../format.ts';

interface Endpoint {
  id: string;
  url: string;
  eventTypes: string[];
  enabled: boolean;
  createdAt: string;
}
interface Delivery {
  id: string;
  type: string;
  status: 'pending' | 'sending' | 'delivered' | 'failed';
  attempts: number;
  nextAttemptAt: string | null;
  lastAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: string;
}
interface Alert {
  threshold: number | null;
  armed: boolean;
}

/** The event types, with what each says. */
const EVENTS: Array<[string, string]> = [
  ['wallet.low_balance', 'Available credits fell below your alert threshold'],
  ['limit.reached', 'A call was refused by a spending limit (429) or an empty wallet (402)'],
  ['wallet.topup_succeeded', 'A top-up was credited'],
  ['wallet.topup_failed', 'A top-up failed'],
];

/** The alert form's one field. */
const ALERT_FIELDS: FormFields = { threshold: { label: 'The alert threshold' } };

/** The endpoint form's fields; a URL refused for where it points names no field, only its code. */
const ENDPOINT_FIELDS: FormFields = {
  url: { label: 'Endpoint URL', codes: ['WEBHOOK_URL_REFUSED'] },
  eventTypes: { label: 'Events' },
};

function LowBalance() {
  const alert = useLoad(() => api<Alert>('GET', '/api/user/low-balance-alert'));
  const action = useAction({ fields: ALERT_FIELDS });
  const { busy, error, run } = action;
  const [saved, setSaved] = useState(false);
  async function submit(event: Event) {
    event.preventDefault();
    const text = String(new FormData(event.currentTarget as HTMLFormElement).get('threshold') ?? '').trim();
    setSaved(false);
    await run(async () => {
      await api('PUT', '/api/user/low-balance-alert', { threshold: text === '' ? null : Number(text) });
      setSaved(true);
      alert.reload();
    });
  }
  return (
    <form class="form-grid" onSubmit={submit} aria-label="Low-balance alert">
      <label>
        Alert when available credits fall below
        <CreditsInput
          name="threshold"
          placeholder="No alert"
          defaultValue={alert.data?.threshold?.toString() ?? ''}
          key={String(alert.data?.threshold)}
          {...action.field('threshold')}
        />
        <FieldMessage action={action} name="threshold" />
      </label>
      <p class="muted">
        {alert.data?.threshold == null
          ? 'No alert set.'
          : `wallet.low_balance fires once below ${formatCredits(alert.data.threshold)} credits${alert.data.armed ? '' : ' (the balance is below it now: it fires after being back above it)'}.`}
      </p>
      <ErrorNote error={alert.error ?? error} />
      <div>
        <button class="btn primary" type="submit" disabled={busy}>
          Save threshold
        </button>
        {saved && (
          <span role="status" class="muted">
            {' '}
            Saved.
          </span>
        )}
      </div>
    </form>
  );
}

function CreateEndpoint(props: { onCreated: (secret: string) => void }) {
  const action = useAction({ fields: ENDPOINT_FIELDS });
  const { busy, error, run, field } = action;
  async function submit(event: Event) {
    event.preventDefault();
    const formElement = event.currentTarget as HTMLFormElement;
    const form = new FormData(formElement);
    await run(async () => {
      const created = await api<{ secret: string }>('POST', '/api/user/webhooks', {
        url: String(form.get('url') ?? '').trim(),
        eventTypes: form.getAll('eventTypes'),
      });
      formElement.reset();
      props.onCreated(created.secret);
    });
  }
  return (
    <form class="form-grid" onSubmit={submit} aria-label="Add a webhook endpoint">
      <label>
        Endpoint URL
        <input
          name="url"
          type="url"
          placeholder="https://example.com/tollgate-events"
          required
          maxLength={2048}
          {...field('url')}
        />
        <FieldMessage action={action} name="url" />
      </label>
      <fieldset>
        <legend>Events</legend>
        <div class="checks">
          {EVENTS.map(([value, text]) => (
            <label class="check" key={value}>
              <input type="checkbox" name="eventTypes" value={value} defaultChecked {...field('eventTypes')} />
              <span>
                <code>{value}</code> <span class="muted">{text}</span>
              </span>
            </label>
          ))}
        </div>
        <FieldMessage action={action} name="eventTypes" />
      </fieldset>
      <ErrorNote error={error} />
      <div>
        <button class="btn primary" type="submit" disabled={busy}>
          Add endpoint
        </button>
      </div>
    </form>
  );
}

function Deliveries(props: { endpoint: Endpoint }) {
  const list = useLoad(
    () =>
      api<{ deliveries: Delivery[] }>(
        'GET',
        `/api/user/webhooks/${encodeURIComponent(props.endpoint.id)}/deliveries?limit=20`,
      ),
    [props.endpoint.id],
  );
  const { busy, error, run } = useAction();
  return (
    <div data-deliveries-of={props.endpoint.id}>
      <div class="row">
        <button
          class="btn small"
          type="button"
          disabled={busy}
          onClick={() =>
            run(async () => {
              await api('POST', `/api/user/webhooks/${encodeURIComponent(props.endpoint.id)}/test`);
              setTimeout(list.reload, 500);
            })
          }
        >
          Send test event
        </button>
        <button class="btn small ghost" type="button" onClick={list.reload}>
          Refresh
        </button>
      </div>
      <ErrorNote error={list.error ?? error} />
      {list.data?.deliveries.length === 0 ? (
        <Empty>No deliveries yet.</Empty>
      ) : (
        <TableBox>
          {/* One block per delivery on a phone: a table that scrolls sideways is out of a keyboard's reach. */}
          <table class="stack">
            <thead>
              <tr>
                <th>Event</th>
                <th>Status</th>
                <th>Attempts</th>
                <th>Last answer</th>
                <th>Next attempt</th>
                <th>Created</th>
              </tr>
            </thead>
            <tbody>
              {(list.data?.deliveries ?? []).map((d) => (
                <tr key={d.id} title={d.id}>
                  <td data-label="Event">
                    <code>{d.type}</code>
                  </td>
                  <td data-label="Status" class={`status-${d.status}`}>
                    {d.status}
                  </td>
                  <td data-label="Attempts">{d.attempts}</td>
                  <td data-label="Last answer">
                    {d.lastStatusCode ?? (d.lastError ? <span class="muted">{d.lastError}</span> : '—')}
                  </td>
                  <td data-label="Next attempt" class="nowrap">
                    {d.nextAttemptAt ? when(d.nextAttemptAt) : '—'}
                  </td>
                  <td data-label="Created" class="nowrap">
                    {when(d.createdAt)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableBox>
      )}
    </div>
  );
}

/** Register URLs for your account's events, see each delivery, send a test; set the low-balance alert. */
export function WebhooksPage() {
  const endpoints = useLoad(() => api<{ webhooks: Endpoint[] }>('GET', '/api/user/webhooks'));
  const [secret, setSecret] = useState<string | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const { busy, error, run } = useAction();
  const act = (work: () => Promise<unknown>) =>
    run(async () => {
      await work();
      endpoints.reload();
    });
  return (
    <>
      <PageHeader
        title="Webhooks"
        lead="Tollgate POSTs your account's events to these URLs, signed with Standard Webhooks, and retries for about a day."
      />
      {secret && (
        <div class="notice success" role="status">
          <div>
            <strong>Signing secret.</strong> Copy it now: it is shown only once. Verify each delivery with it.
          </div>
          <div class="secret">
            <code data-testid="webhook-secret">{secret}</code>
            <CopyButton value={secret} />
          </div>
        </div>
      )}
      <Card title="Low-balance alert">
        <LowBalance />
      </Card>
      <Card title="New endpoint">
        <CreateEndpoint
          onCreated={(s) => {
            setSecret(s);
            endpoints.reload();
          }}
        />
      </Card>
      <Card title="Your endpoints" list>
        <ErrorNote error={endpoints.error ?? error} />
        {endpoints.data?.webhooks.length === 0 ? (
          <Empty>No endpoints yet. Add one above.</Empty>
        ) : (
          (endpoints.data?.webhooks ?? []).map((e) => (
            <section class="endpoint" key={e.id} data-endpoint-id={e.id} aria-label={e.url}>
              <div class="row">
                <code class="grow">{e.url}</code>
                <span class="muted">{e.enabled ? 'Enabled' : 'Disabled'}</span>
              </div>
              <Chips items={e.eventTypes} />
              <div class="row">
                <button class="btn small" type="button" onClick={() => setOpen(open === e.id ? null : e.id)}>
                  {open === e.id ? 'Hide deliveries' : 'Deliveries'}
                </button>
                <button
                  class="btn small"
                  type="button"
                  disabled={busy}
                  onClick={() =>
                    act(() => api('PATCH', `/api/user/webhooks/${encodeURIComponent(e.id)}`, { enabled: !e.enabled }))
                  }
                >
                  {e.enabled ? 'Disable' : 'Enable'}
                </button>
                <button
                  class="btn small"
                  type="button"
                  disabled={busy}
                  onClick={() =>
                    act(async () =>
                      setSecret(
                        (
                          await api<{ secret: string }>(
                            'POST',
                            `/api/user/webhooks/${encodeURIComponent(e.id)}/rotate-secret`,
                          )
                        ).secret,
                      ),
                    )
                  }
                >
                  Rotate secret
                </button>
                <ConfirmButton
                  label="Delete"
                  confirm="Delete endpoint"
                  subject={`endpoint ${e.url}`}
                  confirmSubject={e.url}
                  onConfirm={() =>
                    act(async () => {
                      await api('DELETE', `/api/user/webhooks/${encodeURIComponent(e.id)}`);
                      announce(`Endpoint ${e.url} deleted.`);
                    })
                  }
                />
              </div>
              {open === e.id && <Deliveries endpoint={e} />}
            </section>
          ))
        )}
      </Card>
    </>
  );
}
