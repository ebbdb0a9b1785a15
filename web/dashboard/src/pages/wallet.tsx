import { useState } from 'preact/hooks';
import type { AutoTopup, Balance, TopupsPage, Transaction, TransactionsPage } from '@tollgate/wire';
import { api } from '../api.ts';
import { Card, Empty, ErrorNote, LoadFailure, PageHeader, Stat, useAction, useLoad, TableBox } from '../components.tsx';
import { formatCredits, when } from '../format.ts';
import { SpendChart } from '../chart.tsx';
import { dailySpend, loadUsage } from '../usage-data.ts';
import { AddCredits, AutoTopupCard, ReturningTopup, TopupHistory, useWalletQuery } from './topups.tsx';

/**
 * Balance, reserved and available credits, a 30-day spend chart and the ledger's transactions. A part whose read
 * failed says so, with Try again (LoadFailure), instead of its empty state or zeros.
 */
export function WalletPage() {
  const balance = useLoad(() => api<Balance>('GET', '/api/wallet/balance'));
  const usage = useLoad(loadUsage);
  const [pages, setPages] = useState<Transaction[][]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const first = useLoad(async () => {
    const page = await api<TransactionsPage>('GET', '/api/wallet/transactions?limit=20');
    setPages([page.transactions]);
    setCursor(page.nextCursor);
    return page;
  });
  const transactions = pages.flat();
  // A second click before the page arrived (the button is only disabled on the next render) fetches nothing:
  // useAction runs one load at a time, so the same page is never appended twice.
  const more = useAction();
  const loadMore = (after: string) =>
    more.run(async () => {
      const page = await api<TransactionsPage>(
        'GET',
        `/api/wallet/transactions?limit=20&cursor=${encodeURIComponent(after)}`,
      );
      setPages((p) => [...p, page.transactions]);
      setCursor(page.nextCursor);
    });
  const topups = useLoad(() => api<TopupsPage>('GET', '/api/wallet/topups'));
  const auto = useLoad(() => api<AutoTopup>('GET', '/api/wallet/auto-topup'));
  const query = useWalletQuery();
  const returning = query.get('topup');
  const need = query.get('need') ? Number(query.get('need')) : topups.data?.owed || null;
  const warnBelow = Math.max(topups.data?.lowBalance ?? 0, auto.data?.enabled ? auto.data.threshold : 0);
  const low = balance.data && topups.data && balance.data.available < warnBelow;
  // A figure not known: still coming, or its read failed (said above the figures, with Try again).
  const unknown = balance.error && !balance.loading ? '—' : '…';

  return (
    <>
      <PageHeader
        title="Wallet"
        lead="Prepaid credits. Every AI call holds its worst-case cost first, then settles what it really used."
      />
      {balance.error ? (
        <LoadFailure
          what="Your balance"
          subject="to load the balance"
          error={balance.error}
          busy={balance.loading}
          retry={balance.reload}
          testId="balance-failed"
        />
      ) : null}
      {returning ? (
        <ReturningTopup
          id={returning}
          onSettled={() => {
            balance.reload();
            topups.reload();
            first.reload();
          }}
        />
      ) : null}
      {topups.data?.owed ? (
        <div class="notice warning" role="alert" data-testid="owed">
          Your wallet owes {formatCredits(topups.data.owed)} credits: a refunded or disputed top-up took back credits
          already spent. New calls are refused until a top-up repays it.
        </div>
      ) : null}
      {low ? (
        <div class="notice warning" role="alert" data-testid="low-balance">
          Your balance is low: {formatCredits(balance.data!.available)} credits available.{' '}
          {topups.data!.enabled ? 'Add credits below to keep your apps running.' : ''}
        </div>
      ) : null}
      <div class="stats" id="add-credits">
        <Stat
          label="Balance"
          value={balance.data ? formatCredits(balance.data.balance) : unknown}
          hint="credits"
          testId="wallet-balance"
        />
        <Stat
          label="Reserved"
          value={balance.data ? formatCredits(balance.data.reserved) : unknown}
          hint="held for calls in flight"
          testId="wallet-reserved"
        />
        <Stat
          label="Available"
          value={balance.data ? formatCredits(balance.data.available) : unknown}
          hint="what new calls can use"
          testId="wallet-available"
        />
      </div>
      {topups.data ? (
        <AddCredits page={topups.data} need={need} />
      ) : topups.error ? (
        <Card title="Add credits">
          <LoadFailure
            what="Adding credits and your top-ups"
            subject="to load adding credits and the top-ups"
            error={topups.error}
            busy={topups.loading}
            retry={topups.reload}
            testId="topups-failed"
          />
        </Card>
      ) : null}
      {topups.data?.enabled && auto.error && !auto.data ? (
        <Card title="Auto top-up">
          <LoadFailure
            what="Auto top-up"
            subject="to load auto top-up"
            error={auto.error}
            busy={auto.loading}
            retry={auto.reload}
          />
        </Card>
      ) : null}
      {topups.data && auto.data ? <AutoTopupCard page={topups.data} auto={auto.data} onChange={auto.reload} /> : null}
      {topups.data ? <TopupHistory page={topups.data} /> : null}
      <Card title="Daily spend, last 30 days">
        {/* Without the usage, a chart of zeros would say nothing was spent. */}
        {usage.error && !usage.data ? (
          <LoadFailure
            what="Your daily spend"
            subject="to load the daily spend"
            error={usage.error}
            busy={usage.loading}
            retry={usage.reload}
            testId="spend-failed"
          />
        ) : (
          <SpendChart days={dailySpend(usage.data)} />
        )}
      </Card>
      <Card title="Transactions">
        {first.error ? (
          <LoadFailure
            what="Your transactions"
            subject="to load the transactions"
            error={first.error}
            busy={first.loading}
            retry={first.reload}
            testId="transactions-failed"
          />
        ) : null}
        {transactions.length === 0 && (first.loading || first.error) ? null : transactions.length === 0 ? (
          <Empty>No transactions yet.</Empty>
        ) : (
          <TableBox>
            <table class="stack">
              <thead>
                <tr>
                  <th>When</th>
                  <th>What</th>
                  <th>Type</th>
                  <th class="num">Credits</th>
                </tr>
              </thead>
              <tbody>
                {transactions.map((t) => (
                  <tr key={t.id}>
                    <td data-label="When" class="nowrap">
                      {when(t.createdAt)}
                    </td>
                    <td data-label="What">{t.description}</td>
                    <td data-label="Type">
                      <span class="chip">{t.type}</span>
                    </td>
                    {/* A hold or a release moves no credits out of the balance (amount 0): neither gain nor loss. */}
                    <td
                      data-label="Credits"
                      class={`num ${t.amount < 0 ? 'negative' : t.amount > 0 ? 'positive' : 'muted'}`}
                    >
                      {t.amount > 0 ? '+' : ''}
                      {formatCredits(t.amount)}
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
            Load more
          </button>
        )}
      </Card>
    </>
  );
}
