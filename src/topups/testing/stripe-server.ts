import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import Stripe from 'stripe';
import { randomText } from '../../platform/ids.ts';

/** A request the fake received: method, path, idempotency key and the form parameters, parsed. */
export interface FakeStripeRequest {
  method: string;
  path: string;
  idempotencyKey: string | undefined;
  params: Record<string, any>;
}

/** The answer of a webhook delivery. */
export interface Delivery {
  status: number;
  body: any;
}

/**
 * Parses Stripe's form encoding (`a[b][0][c]=v`) into nested objects (numeric keys stay object keys, which
 * is all the tests read).
 */
function parseForm(text: string): Record<string, any> {
  const out: Record<string, any> = {};
  for (const [rawKey, value] of new URLSearchParams(text)) {
    const path = rawKey.replace(/\]/g, '').split('[');
    let node = out;
    path.slice(0, -1).forEach((part) => (node = node[part] ??= {}));
    node[path.at(-1)!] = value;
  }
  return out;
}

const id = (prefix: string) => `${prefix}_${randomText(20)}`;

/**
 * A local HTTP server that speaks the Stripe endpoints Tollgate uses (customers, Checkout Sessions,
 * PaymentIntents, SetupIntents), with a Checkout stand-in page whose "Pay" button completes the session and
 * delivers the signed `checkout.session.completed` to {@link webhookUrl}, as Stripe would. Events are signed
 * with the `stripe` package's own `generateTestHeaderString`.
 */
export class FakeStripe {
  readonly secretKey = `sk_test_${randomText(24)}`;
  readonly webhookSecret = `whsec_${randomText(32)}`;
  baseUrl = '';
  /** Where events go (a Tollgate's `/api/webhooks/stripe`); set by the test once Tollgate listens. */
  webhookUrl = '';
  readonly requests: FakeStripeRequest[] = [];
  readonly customers = new Map<string, any>();
  readonly sessions = new Map<string, any>();
  readonly paymentIntents = new Map<string, any>();
  readonly setupIntents = new Map<string, any>();
  /** Off-session PaymentIntents are declined (402 card_error) while this is set. */
  declineOffSession = false;
  /** Off-session PaymentIntents are left `processing` (their event is sent by the test) while this is set. */
  holdOffSession = false;
  /** The next this many PaymentIntent creations answer 500 (Stripe's own failure); the client retries twice. */
  failIntentRequests = 0;
  /** When set, the Checkout page's "Pay" redirects first and delivers its event this many ms later (Stripe gives no order). */
  deferDeliveryMs = 0;
  readonly deliveries: Delivery[] = [];
  #idempotent = new Map<string, { status: number; body: unknown }>();
  #server: Server | null = null;

  /** Starts on a random loopback port. */
  async start(): Promise<this> {
    this.#server = createServer(
      (request, response) =>
        void this.#handle(request, response).catch((error) => {
          response
            .writeHead(500, { 'content-type': 'application/json' })
            .end(JSON.stringify({ error: { type: 'api_error', message: String(error) } }));
        }),
    );
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    this.baseUrl = `http://127.0.0.1:${(this.#server.address() as { port: number }).port}`;
    return this;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }

  /** The Tollgate configuration that points at this fake. */
  config(): { STRIPE_SECRET_KEY: string; STRIPE_WEBHOOK_SECRET: string; STRIPE_API_BASE: string } {
    return {
      STRIPE_SECRET_KEY: this.secretKey,
      STRIPE_WEBHOOK_SECRET: this.webhookSecret,
      STRIPE_API_BASE: this.baseUrl,
    };
  }

  /** A Stripe event around `object`. */
  event(type: string, object: Record<string, unknown>): Stripe.Event {
    return {
      id: id('evt'),
      object: 'event',
      type,
      api_version: '2026-10-28.endive',
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      pending_webhooks: 1,
      request: null,
      data: { object },
    } as unknown as Stripe.Event;
  }

  /** Posts a signed event (signed with `secret`, default the endpoint's, at `timestamp`, default now). */
  async deliver(
    event: Stripe.Event | string,
    options: { url?: string; secret?: string; timestamp?: number; header?: string | null } = {},
  ): Promise<Delivery> {
    const payload = typeof event === 'string' ? event : JSON.stringify(event);
    const header =
      options.header !== undefined
        ? options.header
        : Stripe.webhooks.generateTestHeaderString({
            payload,
            secret: options.secret ?? this.webhookSecret,
            timestamp: options.timestamp,
          });
    const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
    if (header !== null) headers['stripe-signature'] = header;
    const response = await fetch(options.url ?? this.webhookUrl, { method: 'POST', headers, body: payload });
    const text = await response.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {}
    const delivery = { status: response.status, body };
    this.deliveries.push(delivery);
    return delivery;
  }

  /** Pays an open Checkout Session: its PaymentIntent and charge (with a receipt) exist afterwards; `async` leaves it unpaid (a bank debit). */
  pay(sessionId: string, options: { async?: boolean } = {}): any {
    const session = this.sessions.get(sessionId);
    if (!session) throw new Error(`no session ${sessionId}`);
    if (session.mode === 'setup') {
      this.setupIntents.get(session.setup_intent).payment_method = id('pm');
      session.status = 'complete';
      return session;
    }
    const intent = this.#intent(
      {
        amount: session.amount_total,
        currency: session.currency,
        customer: session.customer,
        metadata: session.payment_intent_data?.metadata ?? {},
      },
      options.async ? 'processing' : 'succeeded',
    );
    Object.assign(session, {
      status: 'complete',
      payment_status: options.async ? 'unpaid' : 'paid',
      payment_intent: intent.id,
    });
    return session;
  }

  /** The charge of a PaymentIntent (as `charge.refunded` would carry it, `amount_refunded` set). */
  charge(paymentIntentId: string, amountRefunded = 0): any {
    const intent = this.paymentIntents.get(paymentIntentId);
    return { ...intent.latest_charge, amount_refunded: amountRefunded, refunded: amountRefunded >= intent.amount };
  }

  /** A dispute of a PaymentIntent's charge for `amount` minor units. */
  dispute(paymentIntentId: string, amount: number, status: 'needs_response' | 'won' | 'lost' = 'needs_response'): any {
    const intent = this.paymentIntents.get(paymentIntentId);
    return {
      id: `dp_${paymentIntentId.slice(3)}`,
      object: 'dispute',
      amount,
      currency: intent.currency,
      charge: intent.latest_charge.id,
      payment_intent: paymentIntentId,
      status,
    };
  }

  #intent(params: Record<string, any>, status: string): any {
    const intentId = id('pi');
    const charge = {
      id: id('ch'),
      object: 'charge',
      amount: Number(params.amount),
      currency: params.currency,
      payment_intent: intentId,
      paid: true,
      amount_refunded: 0,
      receipt_url: `${this.baseUrl}/receipts/${intentId}`,
    };
    const intent = {
      id: intentId,
      object: 'payment_intent',
      amount: Number(params.amount),
      currency: params.currency,
      customer: params.customer ?? null,
      payment_method: params.payment_method ?? null,
      metadata: params.metadata ?? {},
      status,
      created: Math.floor(Date.now() / 1000),
      latest_charge: charge,
    };
    this.paymentIntents.set(intentId, intent);
    return intent;
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    let text = '';
    for await (const chunk of request) text += chunk;
    const url = new URL(request.url!, this.baseUrl);
    const params = request.method === 'GET' ? parseForm(url.search.slice(1)) : parseForm(text);
    const idempotencyKey = request.headers['idempotency-key'] as string | undefined;
    this.requests.push({ method: request.method!, path: url.pathname, idempotencyKey, params });
    const json = (status: number, body: unknown) => {
      if (idempotencyKey) this.#idempotent.set(`${url.pathname}|${idempotencyKey}`, { status, body });
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const replay = idempotencyKey && this.#idempotent.get(`${url.pathname}|${idempotencyKey}`);
    if (replay)
      return void response
        .writeHead(replay.status, { 'content-type': 'application/json', 'idempotent-replayed': 'true' })
        .end(JSON.stringify(replay.body));
    if (url.pathname.startsWith('/v1/') && request.headers.authorization !== `Bearer ${this.secretKey}`) {
      return json(401, { error: { type: 'invalid_request_error', message: 'Invalid API Key provided.' } });
    }
    let match: RegExpExecArray | null;
    if (request.method === 'POST' && url.pathname === '/v1/customers') {
      const customer = {
        id: id('cus'),
        object: 'customer',
        email: params.email ?? null,
        metadata: params.metadata ?? {},
      };
      this.customers.set(customer.id, customer);
      return json(200, customer);
    }
    if (request.method === 'POST' && url.pathname === '/v1/checkout/sessions') {
      const sessionId = id('cs_test');
      const items = Object.values(params.line_items ?? {}) as any[];
      const amount = items.reduce((sum, item) => sum + Number(item.price_data.unit_amount) * Number(item.quantity), 0);
      const setupIntent =
        params.mode === 'setup'
          ? { id: id('seti'), object: 'setup_intent', customer: params.customer, payment_method: null }
          : null;
      if (setupIntent) this.setupIntents.set(setupIntent.id, setupIntent);
      const session = {
        id: sessionId,
        object: 'checkout.session',
        mode: params.mode,
        status: 'open',
        payment_status: 'unpaid',
        amount_total: params.mode === 'payment' ? amount : null,
        currency: params.currency ?? items[0]?.price_data?.currency ?? null,
        customer: params.customer ?? null,
        client_reference_id: params.client_reference_id ?? null,
        metadata: params.metadata ?? {},
        payment_intent: null,
        payment_intent_data: params.payment_intent_data,
        setup_intent: setupIntent?.id ?? null,
        success_url: params.success_url,
        cancel_url: params.cancel_url,
        url: `${this.baseUrl}/pay/${sessionId}`,
      };
      this.sessions.set(sessionId, session);
      return json(200, session);
    }
    if (request.method === 'GET' && (match = /^\/v1\/payment_intents\/([^/]+)$/.exec(url.pathname))) {
      const intent = this.paymentIntents.get(match[1]);
      return intent
        ? json(200, intent)
        : json(404, { error: { type: 'invalid_request_error', message: 'No such payment_intent' } });
    }
    if (request.method === 'GET' && url.pathname === '/v1/payment_intents') {
      // A customer's PaymentIntents created since `created[gte]`, newest first, in one page.
      const since = Number(params.created?.gte ?? 0);
      const data = [...this.paymentIntents.values()]
        .filter((intent) => intent.customer === params.customer && intent.created >= since)
        .reverse();
      return json(200, { object: 'list', url: '/v1/payment_intents', has_more: false, data });
    }
    if (request.method === 'GET' && (match = /^\/v1\/setup_intents\/([^/]+)$/.exec(url.pathname))) {
      const intent = this.setupIntents.get(match[1]);
      return intent
        ? json(200, intent)
        : json(404, { error: { type: 'invalid_request_error', message: 'No such setup_intent' } });
    }
    if (request.method === 'POST' && url.pathname === '/v1/payment_intents') {
      if (this.failIntentRequests > 0) {
        // Stripe's own failure: not kept under the idempotency key, so a retry runs the request again.
        this.failIntentRequests -= 1;
        return void response
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { type: 'api_error', message: 'Something went wrong on our end.' } }));
      }
      if (this.declineOffSession) {
        const intent = this.#intent(params, 'requires_payment_method');
        return json(402, {
          error: {
            type: 'card_error',
            code: 'card_declined',
            decline_code: 'insufficient_funds',
            message: 'Your card has insufficient funds.',
            payment_intent: intent,
          },
        });
      }
      return json(200, this.#intent(params, this.holdOffSession ? 'processing' : 'succeeded'));
    }
    if ((match = /^\/pay\/([^/]+)$/.exec(url.pathname))) {
      const session = this.sessions.get(match[1]);
      if (!session) return void response.writeHead(404).end('no such session');
      if (request.method === 'GET') {
        const what =
          session.mode === 'setup'
            ? 'Save a card for auto top-up'
            : `Pay ${(session.amount_total / 100).toFixed(2)} ${String(session.currency).toUpperCase()}`;
        return void response
          .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
          .end(
            `<!doctype html><title>Checkout (Stripe stand-in)</title><h1>${what}</h1><form method="post"><button type="submit">Pay</button></form>`,
          );
      }
      this.pay(session.id);
      const event = this.event('checkout.session.completed', session);
      if (this.deferDeliveryMs > 0) {
        setTimeout(() => void this.deliver(event).catch(() => {}), this.deferDeliveryMs);
        return void response.writeHead(303, { location: session.success_url }).end();
      }
      const delivery = await this.deliver(event);
      if (delivery.status !== 200) return void response.writeHead(500).end(`webhook answered ${delivery.status}`);
      return void response.writeHead(303, { location: session.success_url }).end();
    }
    if (url.pathname.startsWith('/receipts/'))
      return void response.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Receipt</h1>');
    json(404, {
      error: {
        type: 'invalid_request_error',
        message: `Unrecognized request URL (${request.method}: ${url.pathname})`,
      },
    });
  }
}
