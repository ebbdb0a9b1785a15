import { useState } from 'preact/hooks';
import type { AutoTopup, Balance, TopupsPage, Transaction, TransactionsPage } from '@tollgate/wire';
import { api } from '../api.ts';
import { Card, Empty, ErrorNote, PageHeader, Stat, useAction, useLoad, TableBox } from '../components.tsx';
import { formatCredits, when } from '../format.ts';
import { SpendChart } from '../chart.tsx';
import { dailySpend, loadUsage } from '../usage-data.ts';
import { AddCredits, AutoTopupCard, ReturningTopup, TopupHistory, useWalletQuery } from './topups.tsx';

/** Balance, reserved and available credits, a 30-day spend chart and the ledger's transactions. */
export function WalletPage() {
  const balance = useLoad(() => api<Balance>('GET', '/api/wallet/balance'));
  const usage = useLoad(() => loadUsage().catch(() => undefined));
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

  return (
    <>
      <PageHeader
        title="Wallet"
        lead="Prepaid credits. Every AI call holds its worst-case cost first, then settles what it really used."
      />
      <ErrorNote error={balance.error} />
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
          value={balance.data ? formatCredits(balance.data.balance) : '…'}
          hint="credits"
          testId="wallet-balance"
        />
        <Stat
          label="Reserved"
          value={balance.data ? formatCredits(balance.data.reserved) : '…'}
          hint="held for calls in flight"
          testId="wallet-reserved"
        />
        <Stat
          label="Available"
          value={balance.data ? formatCredits(balance.data.available) : '…'}
          hint="what new calls can use"
          testId="wallet-available"
        />
      </div>
      {topups.data ? <AddCredits page={topups.data} need={need} /> : <ErrorNote error={topups.error} />}
      {topups.data && auto.data ? <AutoTopupCard page={topups.data} auto={auto.data} onChange={auto.reload} /> : null}
      {topups.data ? <TopupHistory page={topups.data} /> : null}
      <Card title="Daily spend, last 30 days">
        <SpendChart days={dailySpend(usage.data)} />
      </Card>
      <Card title="Transactions">
        <ErrorNote error={first.error} />
        {transactions.length === 0 && !first.loading ? (
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
