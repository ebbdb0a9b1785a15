import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** A prediction as the fake keeps it, in Replicate's wire shape. */
export interface FakePrediction {
  id: string;
  model: string;
  version: string | null;
  input: Record<string, unknown>;
  status: string;
  output: unknown;
  error: string | null;
  logs: string;
  /** Replicate's metrics; the tests also put there what a faulty upstream might send. */
  metrics: Record<string, unknown>;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  /** What the create request asked to be called back on. */
  webhook: string | null;
  webhook_events_filter: string[] | null;
}

/** One signed delivery: the exact bytes and headers a Replicate webhook carries. */
export interface SignedDelivery {
  body: string;
  headers: Record<string, string>;
}

/**
 * A real HTTP server speaking Replicate's prediction API (`POST /v1/predictions`,
 * `POST /v1/models/{owner}/{name}/predictions`, `GET /v1/predictions/{id}`, bearer token checked), plus
 * test controls: move a prediction through its states, make the next create fail, and sign webhooks with
 * the `standardwebhooks` library exactly as Replicate signs them.
 */
export class FakeReplicate {
  readonly token = `r8_${randomBytes(16).toString('hex')}`;
  /** The signing secret Tollgate must be configured with. */
  readonly secret = `whsec_${randomBytes(24).toString('base64')}`;
  readonly predictions = new Map<string, FakePrediction>();
  /** Every request received, method and path. */
  readonly requests: Array<{ method: string; path: string; body: any }> = [];
  /** Status the next create answers with instead of succeeding (then cleared). */
  failNextCreate: { status: number; body: unknown } | null = null;
  /** State the next create answers in instead of `starting` (then cleared): a warm model is `processing` at once. */
  createNextAs: Partial<Pick<FakePrediction, 'status' | 'output' | 'metrics' | 'started_at'>> | null = null;
  /** Called while a create is being answered: a test moves its clock here to make the create take time. */
  onCreate: (() => void) | null = null;
  /** While set, a create waits for it before answering: a test looks at the gateway while Replicate is slow. */
  createGate: Promise<void> | null = null;
  /** The clock the signatures' timestamps come from (epoch ms). */
  now: () => number = () => Date.now();
  #server: Server | null = null;
  baseUrl = '';

  /** Listens on a random loopback port; `baseUrl` is then the API base (ending in `/v1`). */
  async start(): Promise<this> {
    this.#server = createServer((request, response) => void this.#handle(request, response));
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    this.baseUrl = `http://127.0.0.1:${(this.#server!.address() as AddressInfo).port}/v1`;
    return this;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: any;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {}
    const path = (request.url ?? '').split('?')[0];
    this.requests.push({ method: request.method ?? '', path, body });
    const send = (status: number, payload: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
    };
    if (request.headers.authorization !== `Bearer ${this.token}`)
      return send(401, {
        title: 'Unauthenticated',
        detail: 'You did not pass a valid authentication token',
        status: 401,
      });

    const byModel = /^\/v1\/models\/([^/]+)\/([^/]+)\/predictions$/.exec(path);
    if (request.method === 'POST' && (path === '/v1/predictions' || byModel)) {
      if (this.failNextCreate) {
        const failure = this.failNextCreate;
        this.failNextCreate = null;
        return send(failure.status, failure.body);
      }
      if (!body || typeof body.input !== 'object')
        return send(422, { title: 'Input validation failed', detail: 'input is required', status: 422 });
      const prediction: FakePrediction = {
        id: randomBytes(13).toString('hex').slice(0, 26),
        model: byModel ? `${decodeURIComponent(byModel[1])}/${decodeURIComponent(byModel[2])}` : 'some/model',
        version: byModel ? null : String(body.version),
        input: body.input,
        status: 'starting',
        output: null,
        error: null,
        logs: '',
        metrics: {},
        created_at: new Date(this.now()).toISOString(),
        started_at: null,
        completed_at: null,
        webhook: body.webhook ?? null,
        webhook_events_filter: body.webhook_events_filter ?? null,
      };
      this.onCreate?.();
      if (this.createGate) await this.createGate;
      if (this.createNextAs) Object.assign(prediction, this.createNextAs);
      this.createNextAs = null;
      this.predictions.set(prediction.id, prediction);
      return send(201, this.wire(prediction.id));
    }
    const get = /^\/v1\/predictions\/([^/]+)$/.exec(path);
    if (request.method === 'GET' && get) {
      return this.predictions.has(get[1])
        ? send(200, this.wire(get[1]))
        : send(404, { title: 'Not found', detail: 'Not found.', status: 404 });
    }
    const cancel = /^\/v1\/predictions\/([^/]+)\/cancel$/.exec(path);
    if (request.method === 'POST' && cancel) {
      const p = this.predictions.get(cancel[1]!);
      if (!p) return send(404, { title: 'Not found', detail: 'Not found.', status: 404 });
      // A final prediction stays as it is; a running one stops with what it used so far.
      if (!['succeeded', 'failed', 'canceled'].includes(p.status)) this.update(p.id, { status: 'canceled' });
      return send(200, this.wire(p.id));
    }
    send(404, { detail: 'Not found.' });
  }

  /** The prediction as Replicate's API and webhooks show it. */
  wire(id: string): Record<string, unknown> {
    const p = this.predictions.get(id);
    if (!p) throw new Error(`no prediction ${id}`);
    const { webhook, webhook_events_filter, ...shown } = p;
    return {
      ...shown,
      urls: { get: `${this.baseUrl}/predictions/${id}`, cancel: `${this.baseUrl}/predictions/${id}/cancel` },
    };
  }

  /** Moves a prediction to a new state (what Replicate's workers would do). */
  update(
    id: string,
    changes: Partial<Pick<FakePrediction, 'status' | 'output' | 'error' | 'logs' | 'metrics' | 'started_at'>>,
  ): Record<string, unknown> {
    const p = this.predictions.get(id);
    if (!p) throw new Error(`no prediction ${id}`);
    Object.assign(p, changes);
    if (changes.status === 'processing') p.started_at ??= new Date(this.now()).toISOString();
    if (changes.status && ['succeeded', 'failed', 'canceled'].includes(changes.status))
      p.completed_at = new Date(this.now()).toISOString();
    return this.wire(id);
  }

  /**
   * Signs `body` with the `standardwebhooks` library as Replicate does. `secret` overrides the signing
   * secret (rotation, wrong-secret tests); `id` and `timestamp` (epoch ms) override the fresh defaults.
   */
  sign(body: string, options: { id?: string; timestamp?: number; secret?: string } = {}): SignedDelivery {
    const id = options.id ?? `msg_${randomBytes(12).toString('hex')}`;
    const timestamp = new Date(options.timestamp ?? this.now());
    const signature = new Webhook(options.secret ?? this.secret).sign(id, timestamp, body);
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
        'webhook-signature': signature,
      },
    };
  }

  /** The signed webhook of a prediction's current state. */
  webhookFor(id: string, options: { id?: string; timestamp?: number; secret?: string } = {}): SignedDelivery {
    return this.sign(JSON.stringify(this.wire(id)), options);
  }

  /** Posts a delivery to `url` (by default the webhook URL the prediction was created with). */
  static async deliver(url: string, delivery: SignedDelivery): Promise<{ status: number; body: any }> {
    const response = await fetch(url, { method: 'POST', headers: delivery.headers, body: delivery.body });
    const text = await response.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {}
    return { status: response.status, body };
  }
}
