import { useEffect, useRef, useState } from 'preact/hooks';
import type { AutoTopup, Topup, TopupsPage, TopupStarted } from '@tollgate/wire';
import { api } from '../api.ts';
import type { FormFields } from '../field-errors.ts';
import { Card, Command, CreditsInput, Empty, ErrorNote, FieldMessage, useAction, TableBox } from '../components.tsx';
import { formatCredits, when } from '../format.ts';

/** The query of the wallet route (`#/wallet?topup=…&need=…`). */
export function walletQuery(): URLSearchParams {
  return new URLSearchParams(location.hash.split('?')[1] ?? '');
}

/**
 * {@link walletQuery}, followed while the page is open: a restriction link opened in this tab changes only the
 * query (`#/wallet?need=12.345` to `?need=900`, or `/` to `#/wallet?need=…`), which the route alone does not see.
 */
export function useWalletQuery(): URLSearchParams {
  const [query, setQuery] = useState(() => location.hash.split('?')[1] ?? '');
  useEffect(() => {
    const onHash = () => setQuery(location.hash.split('?')[1] ?? '');
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  return new URLSearchParams(query);
}

const money = (amount: number, currency: string) => `${amount.toFixed(2)} ${currency.toUpperCase()}`;

/**
 * The amounts on offer and a custom one; choosing one starts a Checkout and goes there. `need` (credits, from
 * the restriction dialog's link) pre-fills the custom amount with the price of at least that many credits.
 */
export function AddCredits(props: { page: TopupsPage; need: number | null }) {
  const { page, need } = props;
  const needed =
    need && need > 0
      ? Math.min(page.maxAmount, Math.max(page.minAmount, Math.ceil((need / page.creditsPerUnit) * 100) / 100))
      : null;
  const [custom, setCustom] = useState(needed !== null ? String(needed) : '');
  // A new need (the page's ?need= changed while it is open) pre-fills its own price.
  const prefilled = useRef(needed);
  useEffect(() => {
    if (needed === prefilled.current) return;
    prefilled.current = needed;
    setCustom(needed !== null ? String(needed) : '');
  }, [needed]);
  // Busy after a success too: the page is leaving for Checkout.
  const action = useAction({ leavesPage: true, fields: { amount: { label: 'The amount' } } });
  const { busy, error, run } = action;
  if (!page.enabled) {
    return (
      <Card title="Add credits">
        <p class="muted" data-testid="topups-off">
          {page.message}
        </p>
        <p class="muted">
          Meanwhile the operator adds credits (for example{' '}
          <Command text="tollgate grant-credits --email you@example.com --amount 10" />
          ), and they appear here at once.
        </p>
      </Card>
    );
  }
  const buy = (amount: number) =>
    run(async () => {
      const started = await api<TopupStarted>('POST', '/api/wallet/topups', { amount });
      location.assign(started.url);
    });
  return (
    <Card title="Add credits">
      {need ? (
        <p data-testid="credits-needed">
          This request needs <strong>{formatCredits(need)}</strong> more credits.
        </p>
      ) : null}
      <p class="muted">
        {formatCredits(page.creditsPerUnit)} credits per {page.currency.toUpperCase()}, paid securely with Stripe.
      </p>
      <ErrorNote error={error} />
      <div class="row-actions">
        {page.amounts.map((amount) => (
          <button type="button" class="btn" key={amount} disabled={busy} onClick={() => buy(amount)}>
            {money(amount, page.currency)} · {formatCredits(amount * page.creditsPerUnit)} credits
          </button>
        ))}
      </div>
      <form
        class="row spaced"
        onSubmit={(event) => {
          event.preventDefault();
          void buy(Number(custom));
        }}
      >
        <label>
          Custom amount ({page.currency.toUpperCase()}, {page.minAmount}–{page.maxAmount})
          <input
            name="amount"
            type="number"
            min={page.minAmount}
            max={page.maxAmount}
            step="0.01"
            inputMode="decimal"
            required
            value={custom}
            onInput={(e) => setCustom((e.target as HTMLInputElement).value)}
            {...action.field('amount')}
          />
          <FieldMessage action={action} name="amount" />
        </label>
        <div class="row-actions bottom">
          <button type="submit" class="btn primary" disabled={busy}>
            Top up
          </button>
        </div>
      </form>
    </Card>
  );
}

/**
 * Back from Checkout (`?topup=<id>`): shows the top-up as pending and asks again until the webhook has
 * credited it (or it failed), then lets the page reload the balance. Back from a cancelled Checkout
 * (`&cancelled=1`) nothing is coming: the session stays open at Stripe until it expires, a day later.
 */
export function ReturningTopup(props: { id: string; onSettled: () => void }) {
  const [topup, setTopup] = useState<Topup | null>(null);
  const cancelled = Boolean(walletQuery().get('cancelled'));
  useEffect(() => {
    if (cancelled) return;
    let live = true;
    let timer: ReturnType<typeof setTimeout>;
    let asked = 0;
    const poll = async () => {
      const page = await api<TopupsPage>('GET', '/api/wallet/topups').catch(() => null);
      const found = page?.topups.find((t) => t.id === props.id) ?? null;
      if (!live) return;
      setTopup(found);
      // A card payment is confirmed in seconds; a bank debit (`processing`) takes days: ask less and less often.
      if (found && !['pending', 'processing'].includes(found.status)) props.onSettled();
      else timer = setTimeout(poll, Math.min(1000 + 500 * asked++, 10_000));
    };
    void poll();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [props.id, cancelled]);
  if (cancelled)
    return (
      <div class="notice" role="status" data-testid="topup-return">
        The payment was cancelled; nothing was charged.
      </div>
    );
  if (!topup || topup.status === 'pending' || topup.status === 'processing') {
    return (
      <div class="notice" role="status" aria-busy="true" data-testid="topup-return">
        Top-up pending: the credits appear here as soon as Stripe confirms the payment.
      </div>
    );
  }
  if (topup.status === 'succeeded')
    return (
      <div class="notice success" role="status" data-testid="topup-return">
        {formatCredits(topup.credits)} credits added to your wallet.
      </div>
    );
  return (
    <div class="notice warning" role="alert" data-testid="topup-return">
      The top-up did not go through{topup.failureReason ? `: ${topup.failureReason}` : '.'}
    </div>
  );
}

/** Older top-ups loaded with Load more, after the first page `of` (a reload of the page starts over). */
type OlderTopups = { of: TopupsPage; topups: Topup[]; cursor: string | null };

/** The top-ups, newest first, with their status and receipt; Load more pages through all of them. */
export function TopupHistory(props: { page: TopupsPage }) {
  const [older, setOlder] = useState<OlderTopups | null>(null);
  const loaded = older?.of === props.page ? older : null;
  const topups = [...props.page.topups, ...(loaded?.topups ?? [])];
  const cursor = loaded ? loaded.cursor : props.page.nextCursor;
  const more = useAction();
  const loadMore = (after: string) =>
    more.run(async () => {
      const next = await api<TopupsPage>('GET', `/api/wallet/topups?cursor=${encodeURIComponent(after)}`);
      setOlder((shown) => ({
        of: props.page,
        topups: [...(shown?.of === props.page ? shown.topups : []), ...next.topups],
        cursor: next.nextCursor,
      }));
    });
  return (
    <Card title="Top-ups">
      {topups.length === 0 ? (
        <Empty>No top-ups yet.</Empty>
      ) : (
        <TableBox>
          <table class="stack" data-testid="topup-history">
            <thead>
              <tr>
                <th>When</th>
                <th>Paid</th>
                <th class="num">Credits</th>
                <th>Status</th>
                <th>Receipt</th>
              </tr>
            </thead>
            <tbody>
              {topups.map((t) => (
                <tr key={t.id}>
                  <td data-label="When" class="nowrap">
                    {when(t.createdAt)}
                  </td>
                  <td data-label="Paid">
                    {money(t.amount, t.currency)}
                    {t.kind === 'auto' ? <span class="muted"> · auto</span> : null}
                  </td>
                  <td data-label="Credits" class="num">
                    {/* One element, so that a stacked row keeps the amount and what was taken back together. */}
                    <span>
                      {formatCredits(t.credits)}
                      {t.refunded || t.disputed ? (
                        <span class="muted"> (−{formatCredits(t.refunded + t.disputed)})</span>
                      ) : null}
                    </span>
                  </td>
                  <td data-label="Status">
                    <span class="chip" title={t.failureReason ?? undefined}>
                      {t.status}
                    </span>
                  </td>
                  <td data-label="Receipt">
                    {t.receiptUrl ? (
                      <a href={t.receiptUrl} target="_blank" rel="noopener">
                        Receipt
                      </a>
                    ) : (
                      '—'
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableBox>
      )}
      <ErrorNote error={more.error} />
      {cursor && (
        <button type="button" class="btn" disabled={more.busy} onClick={() => void loadMore(cursor)}>
          Load more top-ups
        </button>
      )}
    </Card>
  );
}

/** The auto top-up fields: the API calls the one to buy `amount`. */
const AUTO_TOPUP_FIELDS: FormFields = {
  threshold: { label: 'The threshold' },
  autoAmount: { label: 'The amount to buy', api: ['amount'] },
};

/** Auto top-up: its failure notice, the threshold and amount, and saving a card (Checkout in setup mode). */
export function AutoTopupCard(props: { page: TopupsPage; auto: AutoTopup; onChange: () => void }) {
  const { page, auto } = props;
  const [threshold, setThreshold] = useState(String(auto.threshold || page.lowBalance));
  const [amount, setAmount] = useState(String(auto.amount || page.amounts[1] || page.minAmount));
  // The setup leaves for Checkout (busy until the page has left), the switch reloads the card; one at a time.
  const setup = useAction({ leavesPage: true, fields: AUTO_TOPUP_FIELDS });
  const toggle = useAction({ fields: AUTO_TOPUP_FIELDS });
  // Both actions send the two fields: the one that was refused marks them.
  const refused = toggle.fieldError ? toggle : setup;
  const busy = setup.busy || toggle.busy;
  if (!page.enabled) return null;
  const values = () => ({ threshold: Number(threshold), amount: Number(amount) });
  return (
    <Card title="Auto top-up">
      {auto.failure ? (
        <div class="notice warning" role="alert" data-testid="auto-topup-failure">
          Auto top-up was turned off: {auto.failure.reason} Save a card again to turn it back on.
        </div>
      ) : null}
      <p class="muted" data-testid="auto-topup-state">
        {auto.enabled
          ? `On: when fewer than ${formatCredits(auto.threshold)} credits are available, ${money(auto.amount, page.currency)} is charged to your saved card.`
          : 'Off.'}
        {auto.pending ? ' A payment is in progress.' : ''}
      </p>
      <ErrorNote error={setup.error ?? toggle.error} />
      <div class="row">
        <label>
          When available credits fall below
          <CreditsInput
            name="threshold"
            value={threshold}
            onInput={(e) => setThreshold((e.target as HTMLInputElement).value)}
            {...refused.field('threshold')}
          />
          <FieldMessage action={refused} name="threshold" />
        </label>
        <label>
          Buy ({page.currency.toUpperCase()})
          <input
            name="autoAmount"
            type="number"
            min={page.minAmount}
            max={page.maxAmount}
            step="0.01"
            value={amount}
            onInput={(e) => setAmount((e.target as HTMLInputElement).value)}
            {...refused.field('autoAmount')}
          />
          <FieldMessage action={refused} name="autoAmount" />
        </label>
      </div>
      <div class="row-actions spaced">
        <button
          type="button"
          class="btn primary"
          disabled={busy}
          onClick={() =>
            setup.run(async () =>
              location.assign((await api<{ url: string }>('POST', '/api/wallet/auto-topup/setup', values())).url),
            )
          }
        >
          {auto.hasPaymentMethod ? 'Save a new card' : 'Save a card and turn on'}
        </button>
        {auto.hasPaymentMethod ? (
          <button
            type="button"
            class="btn"
            disabled={busy}
            onClick={() =>
              toggle.run(async () => {
                await api('PUT', '/api/wallet/auto-topup', { enabled: !auto.enabled, ...values() });
                props.onChange();
              })
            }
          >
            {auto.enabled ? 'Turn off' : 'Turn on'}
          </button>
        ) : null}
      </div>
    </Card>
  );
}
