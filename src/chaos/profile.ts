/**
 * How hard the reliability suite pushes. `npm test` runs the quick profile (a few kills, few generated
 * bodies: it must fit the CI budget); `npm run test:chaos` runs the full one the issue asks for. Each figure
 * can be overridden from the environment (`CHAOS_KILLS=50 npm run test:chaos`).
 */
export interface ChaosProfile {
  name: 'quick' | 'full';
  /** kill -9 of a loaded gateway, per database. */
  kills: number;
  /** Clients sending chat calls at once while a gateway is up. */
  loadConcurrency: number;
  /** Rounds of the whole upstream-fault matrix, each round's calls sent at once. */
  faultRounds: number;
  /** Chat calls racing for one small balance and one daily limit across two instances. */
  overspendCalls: number;
  /** Generated bodies per JSON operation of the OpenAPI document. */
  bodiesPerOperation: number;
  /** Operations also sent one body over the server's body limit (0: none; Infinity: all). */
  overLimitOperations: number;
}

const PROFILES: Record<ChaosProfile['name'], ChaosProfile> = {
  quick: {
    name: 'quick',
    kills: 3,
    loadConcurrency: 8,
    faultRounds: 1,
    overspendCalls: 40,
    bodiesPerOperation: 12,
    overLimitOperations: 2,
  },
  full: {
    name: 'full',
    kills: 20,
    loadConcurrency: 16,
    faultRounds: 4,
    overspendCalls: 200,
    bodiesPerOperation: 80,
    overLimitOperations: Infinity,
  },
};

function fromEnv(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return process.env[name] && Number.isFinite(value) && value >= 0 ? value : fallback;
}

/** The profile `name`, with any `CHAOS_*` override from the environment. */
export function chaosProfile(name: ChaosProfile['name']): ChaosProfile {
  const base = PROFILES[name];
  return {
    name,
    kills: fromEnv('CHAOS_KILLS', base.kills),
    loadConcurrency: fromEnv('CHAOS_CONCURRENCY', base.loadConcurrency),
    faultRounds: fromEnv('CHAOS_FAULT_ROUNDS', base.faultRounds),
    overspendCalls: fromEnv('CHAOS_OVERSPEND_CALLS', base.overspendCalls),
    bodiesPerOperation: fromEnv('CHAOS_BODIES', base.bodiesPerOperation),
    overLimitOperations: fromEnv('CHAOS_OVER_LIMIT_OPERATIONS', base.overLimitOperations),
  };
}
