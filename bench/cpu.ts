import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time per call, split by who spends it: the gateway's JavaScript thread (Node runs a server's handlers
 * on one thread, so this is what bounds its throughput) and its other threads (V8's garbage-collector and
 * compiler helpers, libuv's pool), PostgreSQL's processes, the mock upstream and the load generator. On this
 * 2-core machine they all share the cores, so the split says both where a gateway's time goes and whether a
 * cell was bound by the gateway's one thread or by the machine. Read from /proc (clock ticks of 10 ms).
 */

/** µs of CPU per completed call in one cell. */
export interface CpuPerCall {
  /** The gateway process's main (JavaScript) thread. */
  gatewayMain?: number;
  /** The gateway process's other threads. */
  gatewayOther?: number;
  /** Every `postgres` process on the machine (backends, WAL writer, checkpointer…), when PostgreSQL is in use. */
  postgres?: number;
  mock: number;
  loadGenerator: number;
}

/** Whose CPU a measurement reads. */
export interface CpuSubjects {
  gatewayPid?: number;
  mockPid: number;
  postgres: boolean;
}

const TICK_MICROS = 1_000_000 / 100;

/** utime + stime of a /proc stat line, in µs. */
function statMicros(path: string): number {
  try {
    const fields = readFileSync(path, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MICROS;
  } catch {
    return 0; // the process or thread ended meanwhile
  }
}

/** A thread's or process's CPU so far; a process's `stat` counts its threads, dead ones included. */
export const processMicros = (pid: number) => statMicros(`/proc/${pid}/stat`);

function postgresMicros(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') total += processMicros(Number(entry));
    } catch {
      // gone
    }
  }
  return total;
}

interface Reading {
  gatewayMain: number;
  gatewayAll: number;
  postgres: number;
  mock: number;
  loadGenerator: number;
}

function read(subjects: CpuSubjects): Reading {
  return {
    gatewayMain: subjects.gatewayPid ? statMicros(`/proc/${subjects.gatewayPid}/task/${subjects.gatewayPid}/stat`) : 0,
    gatewayAll: subjects.gatewayPid ? processMicros(subjects.gatewayPid) : 0,
    postgres: subjects.postgres ? postgresMicros() : 0,
    mock: processMicros(subjects.mockPid),
    loadGenerator: processMicros(process.pid),
  };
}

/** Starts a measurement; the function it returns ends it and divides by the calls completed meanwhile. */
export function startCpuMeasure(subjects: CpuSubjects): (calls: number) => CpuPerCall {
  const before = read(subjects);
  return (calls) => {
    const after = read(subjects);
    const per = (key: keyof Reading) => (after[key] - before[key]) / Math.max(calls, 1);
    return {
      ...(subjects.gatewayPid
        ? { gatewayMain: per('gatewayMain'), gatewayOther: per('gatewayAll') - per('gatewayMain') }
        : {}),
      ...(subjects.postgres ? { postgres: per('postgres') } : {}),
      mock: per('mock'),
      loadGenerator: per('loadGenerator'),
    };
  };
}
