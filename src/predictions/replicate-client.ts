import { request, type Dispatcher } from 'undici';
import { ApiError } from '../platform/errors.ts';
import { upstreamDispatcher, withoutCredentials } from '../providers/http.ts';

/** A prediction as Replicate's API returns it (only the fields Tollgate reads are typed). */
export interface ReplicatePrediction {
  id: string;
  status: string;
  output?: unknown;
  error?: unknown;
  metrics?: { predict_time?: number } & Record<string, unknown>;
  created_at?: string;
  started_at?: string | null;
  completed_at?: string | null;
  [field: string]: unknown;
}

/** What Replicate should notify: every event, so that the status stays fresh and `completed` finalizes. */
export const WEBHOOK_EVENTS = ['start', 'output', 'logs', 'completed'] as const;

/** Settings of the Replicate adapter. */
export interface ReplicateClientOptions {
  baseUrl: string;
  token: string;
  /** The deadline of one call, headers and body (`UPSTREAM_TIMEOUT_MS`). */
  timeoutMs: number;
  /** The longest silence inside an answer's body (`UPSTREAM_IDLE_TIMEOUT_MS`). */
  idleTimeoutMs: number;
}

/**
 * The Replicate HTTP API, as much as predictions need: create (by model or by version) and read. Every
 * failure becomes an {@link ApiError}: a 400/422 about the input is the caller's mistake (400), anything
 * else is `UPSTREAM_ERROR` (502, or 504 on a timeout), so a caller never sees a 500 for Replicate's trouble.
 */
export class ReplicateClient {
  readonly #options: ReplicateClientOptions;
  /**
   * The chat path's pool, whose timeouts follow the configuration: the global `fetch`'s undici defaults cut a
   * wait for headers, or a silence in a body, at 300 s whatever `UPSTREAM_TIMEOUT_MS` allows.
   */
  readonly #dispatcher: Dispatcher;

  constructor(options: ReplicateClientOptions) {
    this.#options = { ...options, baseUrl: options.baseUrl.replace(/\/+$/, '') };
    this.#dispatcher = upstreamDispatcher({ UPSTREAM_IDLE_TIMEOUT_MS: options.idleTimeoutMs });
  }

  /**
   * Starts a prediction. `upstreamModel` is `owner/name` (the model's latest version, through
   * `/models/{owner}/{name}/predictions`) or `owner/name:version` / a bare version id (through `/predictions`).
   */
  async create(upstreamModel: string, input: Record<string, unknown>, webhook: string): Promise<ReplicatePrediction> {
    const notify = { webhook, webhook_events_filter: WEBHOOK_EVENTS };
    const versioned = /^(?:[^/:]+\/[^/:]+:)?([0-9a-f]{16,})$/i.exec(upstreamModel);
    const [path, body] = versioned
      ? ['/predictions', { version: versioned[1], input, ...notify }]
      : [`/models/${upstreamModel.split('/').map(encodeURIComponent).join('/')}/predictions`, { input, ...notify }];
    return this.#call('POST', path, body);
  }

  /** Reads a prediction by Replicate's id. */
  async get(replicateId: string): Promise<ReplicatePrediction> {
    return this.#call('GET', `/predictions/${encodeURIComponent(replicateId)}`);
  }

  /** Asks Replicate to stop a prediction; it answers the prediction (unchanged when it was already final). */
  async cancel(replicateId: string): Promise<ReplicatePrediction> {
    return this.#call('POST', `/predictions/${encodeURIComponent(replicateId)}/cancel`);
  }

  async #call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<ReplicatePrediction> {
    const signal = AbortSignal.timeout(this.#options.timeoutMs);
    let status: number;
    let text: string;
    try {
      const answer = await request(this.#options.baseUrl + path, {
        method,
        headers: {
          authorization: `Bearer ${this.#options.token}`,
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        body: body ? JSON.stringify(body) : undefined,
        signal,
        dispatcher: this.#dispatcher,
      });
      status = answer.statusCode;
      text = await answer.body.text();
    } catch (error) {
      throw unreachable(error, signal);
    }
    let parsed: any;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {}
    if (status < 200 || status >= 300) {
      const said =
        typeof parsed?.detail === 'string'
          ? parsed.detail
          : typeof parsed?.title === 'string'
            ? parsed.title
            : `HTTP ${status}`;
      // Replicate's words reach the caller and the log: never the operator's token, should they repeat it.
      const detail = withoutCredentials(said, { authorization: `Bearer ${this.#options.token}` });
      if (status === 400 || status === 422)
        throw new ApiError('INVALID_REQUEST', `Replicate refused the input: ${detail}`);
      throw new ApiError('UPSTREAM_ERROR', `Replicate failed: ${detail}`, { status: 502 });
    }
    if (typeof parsed?.id !== 'string' || typeof parsed?.status !== 'string') {
      throw new ApiError('UPSTREAM_ERROR', 'Replicate answered without a prediction id and status.', { status: 502 });
    }
    return parsed as ReplicatePrediction;
  }
}

/** A call that got no whole answer, as the caller's error: past the deadline (504), silent (502) or unreachable. */
function unreachable(error: unknown, signal: AbortSignal): ApiError {
  if (signal.aborted)
    return new ApiError('UPSTREAM_ERROR', 'Replicate did not answer in time.', { status: 504, cause: error });
  if ((error as { code?: string }).code === 'UND_ERR_BODY_TIMEOUT')
    return new ApiError('UPSTREAM_ERROR', 'Replicate went silent for longer than UPSTREAM_IDLE_TIMEOUT_MS.', {
      status: 502,
      cause: error,
    });
  return new ApiError('UPSTREAM_ERROR', 'Replicate could not be reached.', { status: 502, cause: error });
}
