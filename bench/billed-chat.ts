import { startMockUpstream } from '../src/providers/testing/mock-upstream.ts';
import { TestEnv, type TestDatabase } from '../src/testing/harness.ts';
import { CHAT_BODY } from './profile.ts';

/** An in-process instance ready for billed chat calls, one at a time (see {@link startBilledChat}). */
export interface BilledChat {
  env: TestEnv;
  /** One non-streaming chat call with the key; throws unless it answers 200. */
  chat(): Promise<void>;
  /** One streamed chat call (usage asked for), read to its end; throws unless it answers 200. */
  stream(): Promise<void>;
  /** Stops the instance and the mock upstream. */
  close(): Promise<void>;
}

/**
 * An in-process instance against the tests' mock upstream, with one model, one user with credits and one key
 * under a daily spending limit: every call places a hold, checks the limit and settles with its usage record.
 * What bench/statements.ts and bench/allocations.ts measure a call of. Request-rate limits are off.
 */
export async function startBilledChat(kind: TestDatabase, config: Record<string, unknown> = {}): Promise<BilledChat> {
  const mock = await startMockUpstream({ log: false });
  const env = new TestEnv(kind, {
    config: {
      OPENAI_BASE_URL: `${mock.url}/v1`,
      OPENAI_API_KEY: 'x',
      RATE_LIMIT_KEY_RPM: 0,
      RATE_LIMIT_APP_RPM: 0,
      ...config,
    } as any,
  });
  const close = async () => {
    await env.stop();
    await mock.close();
  };
  try {
    await env.start();
    await env.admin('PUT', '/api/admin/models/bench/chat', {
      provider: 'openai',
      upstreamModel: 'gpt-bench',
      pricing: { prompt: 1, completion: 2 },
      maxOutputTokens: 1024,
    });
    const user = await env.createUser();
    await env.admin('POST', `/api/admin/users/${user.userId}/credits`, { amount: 1_000_000, reason: 'bench' });
    const key = (
      await env.dashboard(user, 'POST', '/api/user/api-keys', {
        name: 'bench',
        permissions: ['ai:chat'],
        limit: 100_000,
        limitPeriod: 'daily',
      })
    ).body.apiKey.key;
    const call = async (body: string) => {
      const response = await fetch(`${env.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body,
      });
      if (response.status !== 200) throw new Error(`chat: ${response.status} ${await response.text()}`);
      await response.arrayBuffer();
    };
    const json = JSON.stringify({ ...CHAT_BODY, model: 'bench/chat' });
    const streamed = JSON.stringify({
      ...CHAT_BODY,
      model: 'bench/chat',
      stream: true,
      stream_options: { include_usage: true },
    });
    return { env, chat: () => call(json), stream: () => call(streamed), close };
  } catch (error) {
    await close();
    throw error;
  }
}
