import type { ServerResponse } from 'node:http';
import { startRecordingUpstream, type RecordingUpstream } from '../../testing/recording-upstream.ts';

/**
 * A real HTTP server speaking Anthropic Messages (`/v1/messages`, streamed or not) that holds each request to what
 * the Claude generation of its model takes (Anthropic's docs, 2026), and answers 400 `invalid_request_error` as
 * Anthropic does otherwise; its table is its own, by exact id, so a test of the gateway's reading of ids does not
 * grade itself:
 * - {@link CLAUDE_MODELS}: `none` cannot think (thinking enabled or adaptive, or an effort, is a 400); `budget` takes
 *   only `thinking: { type: "enabled", budget_tokens }` (≥ 1024, below `max_tokens`) and no `output_config.effort`;
 *   `adaptive` takes both kinds and the effort; `adaptive-only` refuses a budget;
 * - thinking on (enabled or adaptive) with a temperature other than 1, a `top_k`, a `top_p` below 0.95, or a tool
 *   choice `any`/`tool` is a 400.
 * A request that thinks is answered a thinking block ({@link CLAUDE_THOUGHT}, signed {@link CLAUDE_SIGNATURE}) before
 * the text {@link CLAUDE_ANSWER}; usage {@link CLAUDE_USAGE} (thinking counted in `output_tokens`, as Anthropic does).
 */
export type ClaudeUpstream = RecordingUpstream;

/** The upstream ids served, and how each takes thinking. */
export const CLAUDE_MODELS: Readonly<Record<string, 'none' | 'budget' | 'adaptive' | 'adaptive-only'>> = {
  'claude-3-5-sonnet-20241022': 'none',
  'claude-3-7-sonnet-20250219': 'budget',
  'claude-sonnet-4-5-20250929': 'budget',
  'claude-opus-4-6': 'adaptive',
  'claude-opus-4-7': 'adaptive-only',
  'claude-fable-5': 'adaptive-only',
};

export const CLAUDE_THOUGHT = 'Rayleigh scattering favours short wavelengths.';
export const CLAUDE_SIGNATURE = 'sig-claude-upstream';
export const CLAUDE_ANSWER = 'Because of Rayleigh scattering.';
/** Input and output tokens of an answer; a thinking answer has {@link CLAUDE_USAGE}.thinking more output. */
export const CLAUDE_USAGE = { input: 10, output: 6, thinking: 12 };

/** Starts the upstream on a random loopback port. */
export function startClaudeUpstream(): Promise<ClaudeUpstream> {
  return startRecordingUpstream((path, body, res) => {
    if (path !== '/v1/messages') return void res.writeHead(404).end();
    const kind = CLAUDE_MODELS[body.model];
    if (!kind) return refuse(res, 404, 'not_found_error', `model: ${body.model}`);
    const problem = refusalOf(body, kind);
    if (problem) return refuse(res, 400, 'invalid_request_error', problem);
    const thinks = body.thinking?.type === 'enabled' || body.thinking?.type === 'adaptive';
    return body.stream ? stream(res, body, thinks) : whole(res, body, thinks);
  });
}

/** What Anthropic says to a request this model's generation does not take, or null. */
function refusalOf(body: any, kind: string): string | null {
  const thinking = body.thinking?.type;
  const effort = body.output_config?.effort;
  if (effort !== undefined && (kind === 'none' || kind === 'budget'))
    return 'output_config.effort: This model does not support the effort parameter.';
  if (thinking === 'enabled' || thinking === 'adaptive') {
    if (kind === 'none') return 'thinking: This model does not support thinking.';
    if (thinking === 'adaptive' && kind === 'budget')
      return 'thinking.type: "adaptive" is not supported on this model; use "enabled" with budget_tokens.';
    if (thinking === 'enabled' && kind === 'adaptive-only')
      return 'thinking.type: "enabled" is not supported on this model; use "adaptive" with output_config.effort.';
    if (thinking === 'enabled') {
      const budget = body.thinking.budget_tokens;
      if (!Number.isInteger(budget) || budget < 1024) return 'thinking.budget_tokens: must be at least 1024.';
      if (budget >= body.max_tokens) return '`max_tokens` must be greater than `thinking.budget_tokens`.';
    }
    if (body.temperature !== undefined && body.temperature !== 1)
      return '`temperature` may only be set to 1 when thinking is enabled.';
    if (body.top_k !== undefined) return '`top_k` is not compatible with thinking.';
    if (body.top_p !== undefined && body.top_p < 0.95)
      return '`top_p` must be greater than or equal to 0.95 when thinking is enabled.';
    if (body.tool_choice?.type === 'any' || body.tool_choice?.type === 'tool')
      return 'Thinking may not be enabled when tool_choice forces tool use.';
  }
  return null;
}

function refuse(res: ServerResponse, status: number, type: string, message: string): void {
  res
    .writeHead(status, { 'content-type': 'application/json' })
    .end(JSON.stringify({ type: 'error', error: { type, message } }));
}

function usageOf(thinks: boolean): { input_tokens: number; output_tokens: number } {
  return {
    input_tokens: CLAUDE_USAGE.input,
    output_tokens: CLAUDE_USAGE.output + (thinks ? CLAUDE_USAGE.thinking : 0),
  };
}

function whole(res: ServerResponse, body: any, thinks: boolean): void {
  const content = [
    ...(thinks ? [{ type: 'thinking', thinking: CLAUDE_THOUGHT, signature: CLAUDE_SIGNATURE }] : []),
    { type: 'text', text: CLAUDE_ANSWER },
  ];
  res.writeHead(200, { 'content-type': 'application/json' }).end(
    JSON.stringify({
      id: 'msg_claude',
      type: 'message',
      role: 'assistant',
      model: body.model,
      content,
      stop_reason: 'end_turn',
      usage: usageOf(thinks),
    }),
  );
}

function stream(res: ServerResponse, body: any, thinks: boolean): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const event = (type: string, data: object) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  const { output_tokens: output, ...input } = usageOf(thinks);
  event('message_start', {
    message: {
      id: 'msg_claude',
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: [],
      usage: { ...input, output_tokens: 1 },
    },
  });
  let index = 0;
  if (thinks) {
    event('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
    const [first, ...rest] = CLAUDE_THOUGHT.split(' ');
    event('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: first } });
    event('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: ` ${rest.join(' ')}` } });
    event('content_block_delta', { index, delta: { type: 'signature_delta', signature: CLAUDE_SIGNATURE } });
    event('content_block_stop', { index });
    index++;
  }
  event('content_block_start', { index, content_block: { type: 'text', text: '' } });
  event('content_block_delta', { index, delta: { type: 'text_delta', text: CLAUDE_ANSWER } });
  event('content_block_stop', { index });
  event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: output } });
  event('message_stop', {});
  res.end();
}
