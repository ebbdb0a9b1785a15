import { after } from 'node:test';
import { startFaultUpstream } from './fault-upstream.ts';
import { formatFigures } from './figures.ts';
import type { ChaosProfile } from './profile.ts';
import { upstreamFaultSuite } from './upstream-faults.ts';
import { killUnderLoadSuite } from './kill-under-load.ts';
import { sigtermStreamSuite } from './sigterm-stream.ts';
import { twoInstanceSuite } from './two-instances.ts';
import { bodyFuzzSuite } from './body-fuzz.ts';

/**
 * Registers the whole reliability suite with one profile: the fault upstream every part shares, each
 * scenario, and the figures printed once everything ran.
 */
export async function registerReliabilitySuite(profile: ChaosProfile): Promise<void> {
  const upstream = await startFaultUpstream();
  after(async () => {
    await upstream.close();
    // Printed on stderr: the test runner relays it as it is, after the results.
    process.stderr.write(`\n${formatFigures(profile.name)}\n`);
  });
  upstreamFaultSuite(profile, upstream);
  killUnderLoadSuite(profile, upstream);
  sigtermStreamSuite(upstream);
  twoInstanceSuite(profile, upstream);
  bodyFuzzSuite(profile);
}
