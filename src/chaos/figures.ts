/**
 * What the reliability suite did, printed at its end: the proof is only as strong as the load behind it,
 * so the numbers are part of the result.
 */
export const figures = {
  /** HTTP requests the suite sent to gateways. */
  requestsSent: 0,
  /** Faults injected: upstream faults, kills, SIGTERMs and refused bodies sent. */
  faultsInjected: 0,
  /** kill -9 of a gateway under load. */
  kills: 0,
  /** Requests cut by a kill (the client saw the connection drop). */
  requestsCut: 0,
  /** Holds whose outcome was checked one by one. */
  holdsChecked: 0,
  /** Holds a killed gateway left open, released by the sweep once expired. */
  holdsSwept: 0,
  /** Credits covered by the conservation checks (granted = available + captured). */
  creditsChecked: 0,
  /** Generated bodies sent to JSON endpoints. */
  bodiesSent: 0,
  /** Ledger verifications run. */
  ledgerVerifications: 0,
};

/** Adds to one figure. */
export function count(name: keyof typeof figures, by = 1): void {
  figures[name] += by;
}

/** The figures as the lines printed at the end of the suite. */
export function formatFigures(profile: string): string {
  const rows: Array<[string, number | string]> = [
    ['profile', profile],
    ['requests sent', figures.requestsSent],
    ['faults injected', figures.faultsInjected],
    ['  of which kill -9', figures.kills],
    ['requests cut by kills', figures.requestsCut],
    ['generated bodies sent', figures.bodiesSent],
    ['holds checked', figures.holdsChecked],
    ['orphaned holds swept', figures.holdsSwept],
    ['credits checked', Math.round(figures.creditsChecked * 1e6) / 1e6],
    ['ledger verifications', figures.ledgerVerifications],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return ['reliability suite figures', ...rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`)].join(
    '\n',
  );
}
