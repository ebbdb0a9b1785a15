import { ApiError } from '../platform/errors.ts';

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
  timeoutMs: number;
}

/**
 * The Replicate HTTP API, as much as predictions need: create (by model or by version) and read. Every
 * failure becomes an {@link ApiError}: a 400/422 about the input is the caller's mistake (400), anything
 * else is `UPSTREAM_ERROR` (502, or 504 on a timeout), so a caller never sees a 500 for Replicate's trouble.
 */
export class ReplicateClient {
  readonly #options: ReplicateClientOptions;

  constructor(options: ReplicateClientOptions) {
    this.#options = { ...options, baseUrl: options.baseUrl.replace(/\/+$/, '') };
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

  async #call(method: string, path: string, body?: unknown): Promise<ReplicatePrediction> {
    let response: Response;
    try {
      response = await fetch(this.#options.baseUrl + path, {
        method,
        headers: {
          authorization: `Bearer ${this.#options.token}`,
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(this.#options.timeoutMs),
      });
    } catch (error) {
      const timedOut = (error as Error).name === 'TimeoutError';
      throw new ApiError(
        'UPSTREAM_ERROR',
        timedOut ? 'Replicate did not answer in time.' : 'Replicate could not be reached.',
        { status: timedOut ? 504 : 502, cause: error },
      );
    }
    const text = await response.text().catch(() => '');
    let parsed: any;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {}
    if (!response.ok) {
      const detail =
        typeof parsed?.detail === 'string'
          ? parsed.detail
          : typeof parsed?.title === 'string'
            ? parsed.title
            : `HTTP ${response.status}`;
      if (response.status === 400 || response.status === 422)
        throw new ApiError('INVALID_REQUEST', `Replicate refused the input: ${detail}`);
      throw new ApiError('UPSTREAM_ERROR', `Replicate failed: ${detail}`, { status: 502 });
    }
    if (typeof parsed?.id !== 'string' || typeof parsed?.status !== 'string') {
      throw new ApiError('UPSTREAM_ERROR', 'Replicate answered without a prediction id and status.', { status: 502 });
    }
    return parsed as ReplicatePrediction;
  }
}
