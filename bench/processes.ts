import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * Child processes of the benchmark: each system under test runs in a process of its own, so its CPU and
 * memory are its own and its peak resident memory can be read from the kernel.
 */

/** A started child process. */
export interface Child {
  name: string;
  pid: number;
  /** Everything the process wrote to stdout so far (its last 100,000 characters once it wrote a million). */
  stdout(): string;
  /** Calls `listener` with each chunk the process writes to stdout from now on. */
  onStdout(listener: (chunk: string) => void): void;
  /** The last lines it wrote to stderr, for error messages. */
  stderrTail(): string;
  /** Its peak resident set size so far (VmHWM), in MiB. */
  peakRssMiB(): number;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it exited. */
  stop(graceMs?: number): Promise<void>;
  /** Resolves when it exits on its own or is stopped. */
  exited: Promise<number | null>;
}

/** Runs `process.execPath` (the pinned Node) with `args`; stdout and stderr are kept in memory. */
export function spawnNode(
  name: string,
  args: string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Child {
  const proc: ChildProcess = spawn(process.execPath, args, {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const listeners: Array<(chunk: string) => void> = [];
  proc.stdout!.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    for (const listener of listeners) listener(text);
    out += text;
    if (out.length > 1_000_000) out = out.slice(-100_000);
  });
  proc.stderr!.on('data', (chunk: Buffer) => {
    err = (err + chunk.toString()).slice(-8_000);
  });
  let exitCode: number | null | undefined;
  let exitSignal: NodeJS.Signals | null = null;
  const exited = new Promise<number | null>((resolve) =>
    proc.on('exit', (code, signal) => {
      exitSignal = signal;
      resolve((exitCode = code));
    }),
  );
  let lastPeak = 0;
  return {
    name,
    pid: proc.pid!,
    stdout: () => out,
    onStdout: (listener) => listeners.push(listener),
    stderrTail: () =>
      [
        exitCode !== undefined ? `(exit code ${exitCode}, signal ${exitSignal})` : '',
        ...err.split('\n').slice(-20),
        ...out.split('\n').slice(-5),
      ].join('\n'),
    peakRssMiB() {
      if (exitCode === undefined) lastPeak = Math.max(lastPeak, readPeakRssMiB(proc.pid!));
      return lastPeak;
    },
    async stop(graceMs = 5_000) {
      if (exitCode !== undefined) return;
      this.peakRssMiB();
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
    exited,
  };
}

/** VmHWM of a live process in MiB (0 when it is gone). */
export function readPeakRssMiB(pid: number): number {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** A TCP port free on loopback right now (the child binds it a moment later). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Polls `url` until it answers (any status below 500), or fails with the child's stderr after `timeoutMs`. */
export async function waitForHttp(url: string, child: Child, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void child.exited.then(() => (exited = true));
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${child.name} exited during start-up:\n${child.stderrTail()}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      await response.arrayBuffer();
      if (response.status < 500) return;
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${child.name} did not answer ${url} within ${timeoutMs} ms:\n${child.stderrTail()}`);
}

/** Waits until the child printed a line that parses as JSON, and returns it. */
export async function firstJsonLine<T>(child: Child, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const line = child
      .stdout()
      .split('\n')
      .find((l) => l.startsWith('{'));
    if (line) return JSON.parse(line) as T;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${child.name} printed nothing within ${timeoutMs} ms:\n${child.stderrTail()}`);
}
