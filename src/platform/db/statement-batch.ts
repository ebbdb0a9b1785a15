import { withRequestQueryTimeout } from './connect.ts';

/** How a {@link StatementBatcher} runs its calls. */
export interface BatcherOptions<I, O> {
  /** Most statements of this batcher running at once. */
  maxInFlight: number;
  /** Most calls one statement carries. */
  maxBatch: number;
  /** Runs one call as its own statement. */
  one: (input: I) => Promise<O>;
  /** Runs several calls as one statement; answers in the inputs' order. */
  many: (inputs: I[]) => Promise<O[]>;
}

/**
 * Batches concurrent calls of one statement into shared statements, as the SQLite driver groups commits:
 * a call goes out at once while fewer than `maxInFlight` statements are running; the calls that arrive
 * meanwhile wait, and go out together (up to `maxBatch`) as one statement when one of those returns.
 * A lone caller never waits for company; under load, one round trip and one commit carry many calls.
 *
 * Invariants:
 * - A call is answered only from the statement that ran it, after that statement returned: one statement
 *   is one transaction, so nobody hears "done" before the commit.
 * - A batch that failed with an error from the server (a constraint, a deadlock…) rolled back whole; its
 *   calls then run one by one, so each caller gets its own outcome and one call's error is not another's.
 *   A batch that failed otherwise (the connection lost) may or may not have committed: its calls all fail
 *   with that error, and none is run a second time.
 */
export class StatementBatcher<I, O> {
  readonly #queue: Array<{ input: I; done: PromiseWithResolvers<O> }> = [];
  #inFlight = 0;
  /** Counts since start: calls answered, and the statements that carried them. */
  readonly stats = { calls: 0, statements: 0 };

  readonly options: BatcherOptions<I, O>;

  constructor(options: BatcherOptions<I, O>) {
    this.options = options;
  }

  /** Runs `input`, alone or in a batch. */
  run(input: I): Promise<O> {
    const done = Promise.withResolvers<O>();
    this.#queue.push({ input, done });
    this.#pump();
    return done.promise;
  }

  #pump(): void {
    while (this.#queue.length > 0 && this.#inFlight < this.options.maxInFlight) {
      const members = this.#queue.splice(0, this.options.maxBatch);
      this.#inFlight++;
      // A statement carries several callers: it runs with a request's limit whoever set it off (the pump goes
      // on in the context of the call that started it, a background job's perhaps).
      void withRequestQueryTimeout(() => this.#send(members)).finally(() => {
        this.#inFlight--;
        this.#pump();
      });
    }
  }

  async #send(members: Array<{ input: I; done: PromiseWithResolvers<O> }>): Promise<void> {
    this.stats.statements++;
    this.stats.calls += members.length;
    if (members.length === 1) return settle(members[0]!, () => this.options.one(members[0]!.input));
    let outputs: O[];
    try {
      outputs = await this.options.many(members.map((member) => member.input));
    } catch (error) {
      if (!rolledBack(error)) {
        for (const member of members) member.done.reject(error);
        return;
      }
      this.stats.statements += members.length;
      await Promise.all(members.map((member) => settle(member, () => this.options.one(member.input))));
      return;
    }
    members.forEach((member, i) => member.done.resolve(outputs[i]!));
  }
}

async function settle<O>(member: { done: PromiseWithResolvers<O> }, run: () => Promise<O>): Promise<void> {
  try {
    member.done.resolve(await run());
  } catch (error) {
    member.done.reject(error);
  }
}

/**
 * True for an error the server answered with (PostgreSQL's error message: a SQLSTATE and a severity): the
 * statement, and its transaction, did not commit. Errors of the client or the socket (ECONNRESET, EPIPE…)
 * carry no severity: the outcome is unknown.
 */
function rolledBack(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, severity } = error as { code?: unknown; severity?: unknown };
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && typeof severity === 'string';
}
