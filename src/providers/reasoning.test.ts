import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CanonicalCall, ReasoningEffort } from '../gateway/canonical.ts';
import { claudeGeneration, claudeThinkingOf } from './claude-thinking.ts';
import { anthropicReasoning, claudeThinkingConflict, openAiEffortOf, openAiReasoningFields } from './reasoning.ts';

describe('Claude generations, read from the upstream model id', () => {
  it('each spelling of a Claude id gives its version and line; one that names no version is null', () => {
    const table: Array<[string, [number, number, string | null] | null]> = [
      ['claude-opus-4-7', [4, 7, 'opus']],
      ['claude-opus-4-6', [4, 6, 'opus']],
      ['claude-sonnet-4-5-20250929', [4, 5, 'sonnet']],
      ['claude-sonnet-4-20250514', [4, 0, 'sonnet']],
      ['claude-opus-4-1-20250805', [4, 1, 'opus']],
      ['claude-opus-4-5', [4, 5, 'opus']],
      ['claude-haiku-4-5-20251001', [4, 5, 'haiku']],
      ['claude-3-7-sonnet-20250219', [3, 7, 'sonnet']],
      ['claude-3-7-sonnet-latest', [3, 7, 'sonnet']],
      ['claude-3-5-sonnet-20241022', [3, 5, 'sonnet']],
      ['claude-3-opus-20240229', [3, 0, 'opus']],
      ['claude-3-haiku-20240307', [3, 0, 'haiku']],
      ['claude-opus-5', [5, 0, 'opus']],
      ['claude-sonnet-5', [5, 0, 'sonnet']],
      ['claude-fable-5', [5, 0, 'fable']],
      ['claude-fable-5-1-20270101', [5, 1, 'fable']],
      ['anthropic/claude-sonnet-4.6', [4, 6, 'sonnet']],
      ['claude-sonnet-4.6', [4, 6, 'sonnet']],
      ['anthropic/claude-3.7-sonnet', [3, 7, 'sonnet']],
      ['anthropic/claude-3.5-haiku', [3, 5, 'haiku']],
      ['anthropic/claude-opus-4.1', [4, 1, 'opus']],
      ['us.anthropic.claude-sonnet-4-5-20250929-v1:0', [4, 5, 'sonnet']],
      ['anthropic.claude-3-7-sonnet-20250219-v1:0', [3, 7, 'sonnet']],
      ['claude-opus-4-1@20250805', [4, 1, 'opus']],
      ['claude-opus-4@20250514', [4, 0, 'opus']],
      ['Claude-Opus-4-7', [4, 7, 'opus']],
      ['claude-2.1', [2, 1, null]],
      ['claude-2', [2, 0, null]],
      ['claude-instant-1.2', [1, 2, 'instant']],
      ['anthropic.claude-v2:1', [2, 0, null]],
      ['anthropic.claude-instant-v1', [1, 0, 'instant']],
      ['reasoner', null],
      ['claude', null],
      ['my-claude-proxy', null],
      ['gpt-5', null],
    ];
    for (const [id, expected] of table)
      assert.deepEqual(
        claudeGeneration(id),
        expected && { major: expected[0], minor: expected[1], family: expected[2] },
        id,
      );
  });

  it('before 3.7 no thinking; 3.7 to 4.5 a budget only; 4.6 adaptive (a budget still taken); Opus 4.7 on, Claude 5 and an id that does not parse adaptive only', () => {
    const table: Array<[string, ReturnType<typeof claudeThinkingOf>]> = [
      ['claude-3-5-sonnet-20241022', 'none'],
      ['claude-3-opus-20240229', 'none'],
      ['claude-2.1', 'none'],
      ['anthropic.claude-instant-v1', 'none'],
      ['claude-3-7-sonnet-20250219', 'budget'],
      ['claude-sonnet-4-20250514', 'budget'],
      ['claude-opus-4-1-20250805', 'budget'],
      ['claude-sonnet-4-5-20250929', 'budget'],
      ['claude-opus-4-5', 'budget'],
      ['claude-haiku-4-5', 'budget'],
      ['claude-opus-4-6', 'adaptive'],
      ['anthropic/claude-sonnet-4.6', 'adaptive'],
      ['claude-opus-4-7', 'adaptive-only'],
      ['claude-opus-5', 'adaptive-only'],
      ['claude-fable-5', 'adaptive-only'],
      ['claude-sonnet-5-20270101', 'adaptive-only'],
      ['reasoner', 'adaptive-only'],
      ['claude-next', 'adaptive-only'],
    ];
    for (const [id, expected] of table) assert.equal(claudeThinkingOf(id), expected, id);
  });
});

describe('an effort or a budget in the form each Claude generation takes', () => {
  const effort = (e: ReasoningEffort) => ({ effort: e });

  it('4.6 and later: adaptive thinking with the effort (minimal as low); none disabled; a model that does not reason gets nothing', () => {
    for (const model of ['claude-opus-4-6', 'claude-opus-4-7', 'claude-fable-5', 'reasoner']) {
      assert.deepEqual(anthropicReasoning(effort('high'), 4000, model, true), {
        thinking: { type: 'adaptive' },
        effort: 'high',
      });
      assert.deepEqual(anthropicReasoning(effort('minimal'), 4000, model, true), {
        thinking: { type: 'adaptive' },
        effort: 'low',
      });
      assert.deepEqual(anthropicReasoning(effort('max'), 500, model, true), {
        thinking: { type: 'adaptive' },
        effort: 'max',
      });
      assert.deepEqual(anthropicReasoning(effort('none'), 4000, model, true), { thinking: { type: 'disabled' } });
      for (const e of ['high', 'none'] as const)
        assert.deepEqual(anthropicReasoning(effort(e), 4000, model, false), {});
    }
    assert.deepEqual(anthropicReasoning(undefined, 4000, 'claude-opus-4-7', true), {});
  });

  it("3.7 to 4.5: a budget of the effort's share of the cap (minimal and low 20 %, medium 50 %, high 80 %, xhigh 90 %, max 95 %), at least 1024 and below the cap, no effort; no thinking under a cap of 1025", () => {
    for (const model of ['claude-3-7-sonnet-20250219', 'claude-sonnet-4-5-20250929', 'claude-opus-4-5']) {
      const budget = (e: ReasoningEffort, cap: number) => anthropicReasoning(effort(e), cap, model, true);
      const enabled = (budget_tokens: number) => ({ thinking: { type: 'enabled', budget_tokens } });
      assert.deepEqual(budget('minimal', 10_000), enabled(2000));
      assert.deepEqual(budget('low', 10_000), enabled(2000));
      assert.deepEqual(budget('medium', 10_000), enabled(5000));
      assert.deepEqual(budget('high', 10_000), enabled(8000));
      assert.deepEqual(budget('xhigh', 10_000), enabled(9000));
      assert.deepEqual(budget('max', 10_000), enabled(9500));
      assert.deepEqual(budget('low', 4000), enabled(1024));
      assert.deepEqual(budget('high', 1100), enabled(1024));
      assert.deepEqual(budget('max', 1025), enabled(1024));
      assert.deepEqual(budget('high', 1024), {});
      assert.deepEqual(budget('high', 500), {});
      assert.deepEqual(budget('none', 4000), { thinking: { type: 'disabled' } });
      assert.deepEqual(anthropicReasoning(effort('high'), 10_000, model, false), {});
    }
  });

  it('before 3.7 nothing, whatever the catalogue says (the model cannot think)', () => {
    for (const e of ['high', 'none'] as const)
      assert.deepEqual(anthropicReasoning(effort(e), 4000, 'claude-3-5-sonnet-20241022', true), {});
  });

  it('a budget: kept (below the cap) where a budget is taken, 4.6 included; adaptive with the effort of that budget where only adaptive is; nothing on a model that does not reason', () => {
    const budget = { budgetTokens: 3600 };
    for (const model of ['claude-3-7-sonnet-20250219', 'claude-opus-4-6'])
      assert.deepEqual(anthropicReasoning(budget, 4000, model, true), {
        thinking: { type: 'enabled', budget_tokens: 3600 },
      });
    assert.deepEqual(anthropicReasoning({ budgetTokens: 9000 }, 4000, 'claude-opus-4-6', true), {
      thinking: { type: 'enabled', budget_tokens: 3999 },
    });
    for (const model of ['claude-opus-4-7', 'claude-fable-5']) {
      assert.deepEqual(anthropicReasoning(budget, 4000, model, true), {
        thinking: { type: 'adaptive' },
        effort: 'high',
      });
      assert.deepEqual(anthropicReasoning({ budgetTokens: 2000 }, 4000, model, true), {
        thinking: { type: 'adaptive' },
        effort: 'medium',
      });
      assert.deepEqual(anthropicReasoning({ budgetTokens: 1024 }, 8192, model, true), {
        thinking: { type: 'adaptive' },
        effort: 'low',
      });
    }
    assert.deepEqual(anthropicReasoning(budget, 4000, 'claude-opus-4-7', false), {});
  });
});

describe("OpenAI's efforts where a model lacks one", () => {
  it('none is minimal on gpt-5, -mini, -nano; the o-series takes none and minimal as low, xhigh and max as high; anything else as sent', () => {
    const table: Array<[string, ReasoningEffort, ReasoningEffort]> = [
      ['gpt-5', 'none', 'minimal'],
      ['gpt-5-mini', 'none', 'minimal'],
      ['gpt-5-nano-2025-08-07', 'none', 'minimal'],
      ['openai/gpt-5', 'none', 'minimal'],
      ['gpt-5', 'minimal', 'minimal'],
      ['gpt-5', 'high', 'high'],
      ['gpt-5.1', 'none', 'none'],
      ['gpt-5.2', 'none', 'none'],
      ['gpt-5-chat-latest', 'none', 'none'],
      ['o3', 'none', 'low'],
      ['o3', 'minimal', 'low'],
      ['o3', 'xhigh', 'high'],
      ['o3', 'max', 'high'],
      ['o3', 'medium', 'medium'],
      ['o4-mini', 'none', 'low'],
      ['o3-mini-2025-01-31', 'xhigh', 'high'],
      ['o1', 'minimal', 'low'],
      ['o3-pro', 'max', 'high'],
      ['openai/o4-mini', 'minimal', 'low'],
      ['reasoner', 'none', 'none'],
      ['gpt-oss-120b', 'max', 'max'],
    ];
    for (const [model, effort, expected] of table) assert.equal(openAiEffortOf(model, effort), expected, model);
  });

  it('a translated call gets the mapped effort, a budget the mapped effort of its share', () => {
    assert.deepEqual(openAiReasoningFields({ effort: 'none' }, 4000, 'openai', 'gpt-5', true), {
      reasoning_effort: 'minimal',
    });
    assert.deepEqual(openAiReasoningFields({ effort: 'xhigh' }, 4000, 'openai', 'o3', false), {
      reasoning_effort: 'high',
    });
    assert.deepEqual(openAiReasoningFields({ budgetTokens: 3600 }, 4000, 'openai', 'o3', true), {
      reasoning_effort: 'high',
    });
  });
});

describe('what Anthropic does not combine with the thinking an effort turns on', () => {
  const call = (fields: Partial<CanonicalCall>): CanonicalCall => ({
    model: 'acme/claude',
    system: [],
    messages: [],
    tools: [],
    maxOutputTokens: null,
    stream: false,
    reasoning: { effort: 'high' },
    ...fields,
  });
  const claude = (upstreamModel: string, fields: Record<string, unknown> = {}) => ({
    id: 'acme/claude',
    provider: 'anthropic',
    upstreamModel,
    reasons: true,
    maxOutputTokens: 8000,
    ...fields,
  });
  const param = (error: unknown) => (error as { details?: { param?: string } } | null)?.details?.param ?? null;

  it('names temperature (not 1), top_k, top_p (below 0.95) and a forced tool choice, on every generation that thinks', () => {
    for (const model of ['claude-3-7-sonnet-20250219', 'claude-opus-4-6', 'claude-opus-4-7', 'claude-fable-5']) {
      assert.equal(param(claudeThinkingConflict(call({ temperature: 0.2 }), claude(model), 'x')), 'temperature');
      assert.equal(param(claudeThinkingConflict(call({ topK: 5 }), claude(model), 'x')), 'top_k');
      assert.equal(param(claudeThinkingConflict(call({ topP: 0.5 }), claude(model), 'x')), 'top_p');
      assert.equal(param(claudeThinkingConflict(call({ toolChoice: 'required' }), claude(model), 'x')), 'tool_choice');
      assert.equal(
        param(claudeThinkingConflict(call({ toolChoice: { name: 'f' } }), claude(model), 'x')),
        'tool_choice',
      );
      for (const fine of [
        { temperature: 1 },
        { topP: 0.95 },
        { toolChoice: 'auto' as const },
        { toolChoice: 'none' as const },
      ])
        assert.equal(claudeThinkingConflict(call(fine), claude(model), 'x'), null, JSON.stringify(fine));
    }
    const error = claudeThinkingConflict(call({ temperature: 0 }), claude('claude-opus-4-7'), 'reasoning_effort');
    assert.equal(error?.code, 'UNSUPPORTED_PARAMETER');
    assert.match(
      error!.message,
      /reasoning_effort "high" turns on Claude's thinking on "acme\/claude", which Anthropic does not combine with a temperature other than 1/,
    );
  });

  it('none when nothing thinks: effort none or absent, a model that does not reason or cannot think, a budget model under a cap of 1025, another provider', () => {
    const hot = { temperature: 0.2 };
    const none = [
      claudeThinkingConflict(call({ ...hot, reasoning: { effort: 'none' } }), claude('claude-opus-4-7'), 'x'),
      claudeThinkingConflict(call({ ...hot, reasoning: undefined }), claude('claude-opus-4-7'), 'x'),
      claudeThinkingConflict(call(hot), claude('claude-opus-4-7', { reasons: false }), 'x'),
      claudeThinkingConflict(call(hot), claude('claude-3-5-sonnet-20241022'), 'x'),
      claudeThinkingConflict(call({ ...hot, maxOutputTokens: 1024 }), claude('claude-3-7-sonnet-20250219'), 'x'),
      claudeThinkingConflict(call(hot), claude('claude-3-7-sonnet-20250219', { maxOutputTokens: 1000 }), 'x'),
      claudeThinkingConflict(call(hot), claude('claude-opus-4-7', { provider: 'openrouter' }), 'x'),
    ];
    assert.deepEqual(none, [null, null, null, null, null, null, null]);
    // An adaptive model thinks under any cap.
    assert.equal(
      param(claudeThinkingConflict(call({ ...hot, maxOutputTokens: 500 }), claude('claude-opus-4-7'), 'x')),
      'temperature',
    );
  });
});
