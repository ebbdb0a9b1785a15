import type { UsageTotals } from '@tollgate/wire';
import { Card, Empty, ErrorNote, PageHeader, Stat, useLoad, TableBox } from '../components.tsx';
import { count, formatCredits } from '../format.ts';
import { SpendChart } from '../chart.tsx';
import { dailySpend, loadUsage } from '../usage-data.ts';

function UsageTable(props: { label: string; rows: Array<UsageTotals & { name: string }> }) {
  if (props.rows.length === 0) return <Empty>No calls in the last 30 days.</Empty>;
  return (
    <TableBox>
      <table class="stack" aria-label={props.label}>
        <thead>
          <tr>
            <th>{props.label}</th>
            <th class="num">Requests</th>
            <th class="num">Prompt tokens</th>
            {/* Among the prompt tokens, those priced at the model's cache prices: why a mostly-cached call cost little. */}
            <th class="num">Cache-read tokens</th>
            <th class="num">Cache-write tokens</th>
            <th class="num">Completion tokens</th>
            <th class="num">Cost (credits)</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((r) => (
            <tr key={r.name}>
              <td data-label={props.label}>{r.name}</td>
              <td data-label="Requests" class="num">
                {count(r.requests)}
              </td>
              <td data-label="Prompt tokens" class="num">
                {count(r.promptTokens)}
              </td>
              <td data-label="Cache-read tokens" class="num">
                {count(r.cacheReadTokens)}
              </td>
              <td data-label="Cache-write tokens" class="num">
                {count(r.cacheWriteTokens)}
              </td>
              <td data-label="Completion tokens" class="num">
                {count(r.completionTokens)}
              </td>
              <td data-label="Cost (credits)" class="num">
                {formatCredits(r.cost)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableBox>
  );
}

/** Requests, tokens and cost over the last 30 days, by model, by app and by API key. */
export function UsagePage() {
  const usage = useLoad(loadUsage);
  const totals = usage.data?.totals;
  return (
    <>
      <PageHeader title="Usage" lead="The last 30 days of calls made with your keys, your apps and this dashboard." />
      <ErrorNote error={usage.error} />
      <div class="stats">
        <Stat label="Requests" value={totals ? count(totals.requests) : '…'} testId="usage-requests" />
        <Stat
          label="Tokens"
          value={totals ? count(totals.promptTokens + totals.completionTokens) : '…'}
          hint={totals ? `${count(totals.promptTokens)} in · ${count(totals.completionTokens)} out` : undefined}
        />
        <Stat label="Cost" value={totals ? formatCredits(totals.cost) : '…'} hint="credits" testId="usage-cost" />
      </div>
      <Card title="Daily spend">
        <SpendChart days={dailySpend(usage.data)} />
      </Card>
      <Card title="By model">
        <UsageTable label="Model" rows={(usage.data?.byModel ?? []).map((r) => ({ ...r, name: r.model }))} />
      </Card>
      <Card title="By app">
        <UsageTable
          label="App"
          rows={(usage.data?.byApp ?? []).map((r) => ({ ...r, name: r.appId ? r.name : `${r.name}` }))}
        />
      </Card>
      <Card title="By API key">
        <UsageTable label="API key" rows={usage.data?.byKey ?? []} />
      </Card>
    </>
  );
}
