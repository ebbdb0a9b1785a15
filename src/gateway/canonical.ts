/**
 * The one canonical call and event stream every inbound protocol and every provider meets in.
 *
 * An inbound protocol (`src/protocols/<name>/`) parses its request into a {@link CanonicalCall} and renders
 * {@link CanonicalResult}s and {@link CanonicalEvent}s in its own wire format; a provider
 * (`src/providers/<name>/`) turns a call into its upstream request and the upstream's answers back into
 * canonical results and events. Any protocol therefore reaches any provider, and a new one is one folder.
 *
 * Why `native`: translating a request into the canonical shape and back loses what the canonical shape has no
 * word for (Anthropic's `cache_control`, an OpenAI field on the pass-through allow-list). When the provider
 * speaks the inbound protocol itself, it sends the client's own body (model and output cap replaced) and tags
 * each event with the upstream's own frame, which the inbound renderer relays as-is. The canonical fields are
 * always filled too: billing, the stream tally and every cross-protocol pair read only those.
 */

/**
 * The wire protocols a call can arrive in or a provider can speak (`openai-completions`: OpenAI's legacy text
 * completions, `POST /v1/completions`).
 */
export type WireProtocol = 'openai-chat' | 'openai-completions' | 'openai-responses' | 'anthropic-messages';

/** One piece of a message's content. */
export type CanonicalPart =
  | {
      type: 'text';
      text: string;
      /** Anthropic prompt caching marker, kept for Anthropic upstreams. */ cacheControl?: Record<string, unknown>;
    }
  | { type: 'image'; /** An `https:` or `data:` URL. */ url: string; detail?: 'auto' | 'low' | 'high' }
  | {
      type: 'tool_call';
      id: string;
      name: string;
      /** The arguments as a JSON text, exactly as produced. */ arguments: string;
    }
  | {
      type: 'tool_result';
      callId: string;
      content: string;
      isError?: boolean;
      /** Anthropic prompt caching marker, kept for Anthropic upstreams. */ cacheControl?: Record<string, unknown>;
    }
  | {
      type: 'reasoning';
      text: string;
      /** Anthropic's thinking signature or an encrypted reasoning item, replayed verbatim. */ signature?: string;
    }
  | CanonicalDocument;

/**
 * A document the model reads (Anthropic's `document` block; chat's `file` part, Responses' `input_file`): a PDF
 * (`pdf`: a `data:application/pdf;base64,…` URL or an http(s) one; also a chat or Responses inline file of
 * another media type, as its `data:` URL, which a model reads by its bytes the same way) or a text (`text`). A
 * PDF's input tokens (each page's text and each page as an image) cannot be known from its bytes, so a call
 * carrying one is held for its model's whole context (`gateway/chat-plan.ts`); a text document is counted as its
 * title, context and text, and held for the whole context too when `citations` is on (Anthropic chunks it and
 * adds instructions, uncounted here).
 */
export interface CanonicalDocument {
  type: 'document';
  source: { type: 'pdf'; url: string } | { type: 'text'; text: string };
  /** Anthropic's `title` (chat's `filename` on an OpenAI-compatible upstream). */
  title?: string;
  /** Anthropic's `context`: text about the document the model reads with it. */
  context?: string;
  /** Anthropic's `citations.enabled`: the answer cites passages of the document. */
  citations?: boolean;
  /** Anthropic prompt caching marker, kept for Anthropic upstreams. */
  cacheControl?: Record<string, unknown>;
  /**
   * Where the client sent it (chat's `messages[i].content[j]`, Responses' `input[i].content[j]`), for the 400s
   * that name it; absent (Anthropic's blocks), they name `messages`.
   */
  param?: string;
}

/**
 * How hard the model should think: OpenAI's efforts (`none` … `max`, the `openai` SDK's `ReasoningEffort`), which
 * include Anthropic's (`low`, `medium`, `high`, `xhigh`, `max`).
 */
export type ReasoningEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';

/** Every {@link ReasoningEffort}, lowest first. */
export const REASONING_EFFORTS: readonly ReasoningEffort[] = [
  'none',
  'minimal',
  'low',
  'medium',
  'high',
  'xhigh',
  'max',
];

/** One turn of the conversation. System instructions are {@link CanonicalCall.system}, not a message. */
export interface CanonicalMessage {
  role: 'user' | 'assistant' | 'tool';
  content: CanonicalPart[];
}

/** A function the model may call; `parameters` is a JSON Schema. */
export interface CanonicalTool {
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
  /** true: the call's arguments must follow `parameters` exactly (OpenAI's `strict`, Anthropic's `strict`). */
  strict?: boolean;
}

/** A call as every protocol means it. */
export interface CanonicalCall {
  /** The public model id (`<vendor>/<model>`), before the catalogue resolves it. */
  model: string;
  /** System instructions, in order (OpenAI system/developer messages, Responses `instructions`, Anthropic `system`). */
  system: CanonicalPart[];
  messages: CanonicalMessage[];
  tools: CanonicalTool[];
  /** `auto` (default), `none`, `required` (any tool), or one tool by name. */
  toolChoice?: 'auto' | 'none' | 'required' | { name: string };
  /** false: at most one tool call per turn (OpenAI `parallel_tool_calls`, Anthropic `disable_parallel_tool_use`). */
  parallelToolCalls?: boolean;
  /** The client's output cap, when it set one (null: the model's cap, lowered to what the payer can afford). */
  maxOutputTokens: number | null;
  stream: boolean;
  temperature?: number;
  topP?: number;
  /** Anthropic's and some OpenAI-compatible servers' top-k sampling. */
  topK?: number;
  /**
   * Request metadata for an Anthropic upstream (its `metadata`, e.g. `user_id`, passed as is: put only what
   * Anthropic accepts). Not sent to OpenAI-compatible upstreams from another protocol: OpenAI refuses
   * `metadata` without `store`. (The mock upstream reads `metadata.mock_usage` to dictate usage in tests.)
   */
  metadata?: Record<string, unknown>;
  stop?: string[];
  /**
   * Reasoning asked for: an effort (OpenAI's `reasoning_effort`, Anthropic's `output_config.effort`) and/or a
   * thinking budget (Anthropic's `budget_tokens`). Each provider says it in its own terms (`providers/reasoning.ts`).
   */
  reasoning?: { effort?: ReasoningEffort; budgetTokens?: number };
  /** A JSON output requested: a schema (`json_schema`) or any JSON object (`json_object`). */
  responseFormat?:
    { type: 'json_object' } | { type: 'json_schema'; name: string; schema: Record<string, unknown>; strict?: boolean };
  /** Predicted output (OpenAI's `prediction`): its tokens may all be billed as output, beyond the cap. */
  prediction?: string;
  /**
   * OpenAI's prompt-cache routing (`prompt_cache_key`, `prompt_cache_retention`): which requests share a cached
   * prefix, and how long it is kept (OpenAI prices both retentions alike). Sent to OpenAI-compatible upstreams
   * (`prompt_cache_retention` to OpenAI only); Anthropic caches by `cache_control` instead.
   */
  promptCache?: { key?: string; retention?: string };
  /**
   * Anthropic's top-level `cache_control` (automatic caching: the breakpoint on the last cacheable block). A
   * provider that takes the marker on content parts only (OpenRouter) gets it on the conversation's last part.
   */
  cacheControl?: Record<string, unknown>;
  /**
   * Where the call first asks for a 1-hour prompt cache (`cache_control.ttl: "1h"`): that `cache_control`'s
   * path, e.g. `system[0].cache_control`, set by the parser; absent: no 1-hour cache asked. Such a call goes only to a
   * model with a `cacheWrite1h` price, is held with that price among its input prices, and a cache write its
   * upstream reports without a lifetime (OpenRouter's `cache_write_tokens`) is billed at it (`gateway/long-cache.ts`).
   */
  longCache?: string;
  /**
   * A server-side web search the upstream runs and bills per search (Anthropic's web search tool, passed in the
   * native body): at most `maxUses` searches (the `max_uses` sent upstream), each held at the model's `webSearch`
   * price plus `inputTokensPerUse` input tokens for the results it brings into the prompt (`chat-plan.ts`).
   */
  webSearch?: { maxUses: number; inputTokensPerUse: number };
  /**
   * Texts of the input only a native upstream receives (Anthropic's replayed `server_tool_use` and
   * `web_search_tool_result` blocks, citations), which the canonical messages do not carry: counted into the prompt
   * as the hold counts it, since the upstream bills them as input.
   */
  nativeInput?: string[];
  /**
   * Answers the upstream generates, each of which may produce the whole output cap (legacy completions'
   * `n` or `best_of` per prompt); absent: OpenAI chat's `n` from its native body, else 1.
   */
  choices?: number;
  /**
   * The messages are prompt texts an upstream continues as they are (legacy completions), not a chat: counted as
   * their text alone, without the per-message framing a chat template adds.
   */
  rawPrompt?: boolean;
  /** The client's own body, for a provider that speaks `protocol` natively (see the module comment). */
  native?: { protocol: WireProtocol; body: Record<string, unknown> };
}

/** Why the output ended. */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'error';

/**
 * Token counts of one call, disjoint where the names say so: `inputTokens` is all input (cache reads and
 * writes included), `outputTokens` all output (reasoning included). Billing prices these through the
 * catalogue; a protocol renders them in its own names.
 */
export interface CanonicalUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  /** Cache writes of every lifetime. */
  cacheWriteTokens?: number;
  /** The 1-hour cache writes among `cacheWriteTokens` (Anthropic's `ephemeral_1h_input_tokens`). */
  cacheWrite1hTokens?: number;
  reasoningTokens?: number;
  /** Audio input tokens (inside `inputTokens`). */
  audioInputTokens?: number;
  /** Audio output tokens (inside `outputTokens`). */
  audioOutputTokens?: number;
  /** Server-side web searches the model ran (billed per search). */
  webSearches?: number;
  /**
   * The upstream's report restated in OpenAI chat's usage shape (Anthropic's counts summed as
   * `providers/anthropic` does), unsanitized: a provider sets it, the pipeline prices it through
   * `chat-usage.ts`, and a renderer may show its extra fields (OpenAI's prediction counts). Never trusted as sent.
   */
  reported?: Record<string, unknown>;
  /** What the call cost, in credits (a decimal number as `usage.cost` shows it), once priced. */
  cost?: number;
}

/** A whole (non-streamed) answer. */
export interface CanonicalResult {
  id: string;
  /** The public model id that answered (a fallback's, when one did). */
  model: string;
  created: number;
  /** The output, in order: text, reasoning and tool calls. */
  content: CanonicalPart[];
  /** OpenAI chat's `n` > 1: the output of the other choices (billed too); `content` is the first choice's. */
  otherChoices?: CanonicalPart[][];
  finishReason: FinishReason;
  usage: CanonicalUsage;
  /** The upstream's own answer, when it spoke the inbound protocol (relayed with model and usage replaced). */
  native?: { protocol: WireProtocol; body: Record<string, unknown> };
}

/**
 * One event of a streamed answer. A stream is: `start`, then any number of deltas, then `usage` (when known),
 * then `end`; or an `error` after output began. `native` carries the upstream frame behind the event when the
 * provider spoke the inbound protocol. `choice` (absent: 0) is set only on a native OpenAI chat stream with
 * `n` > 1, for the other choices' deltas: they are billed, and only that protocol's renderer (which relays the
 * native frames) ever sees them; every other renderer may ignore the field.
 */
export type CanonicalEvent = (
  | { type: 'start'; id: string; model: string; created: number }
  | { type: 'text'; delta: string; choice?: number }
  | { type: 'reasoning'; delta: string; signature?: string; choice?: number }
  | { type: 'tool_call_start'; index: number; id: string; name: string; choice?: number }
  | { type: 'tool_call_delta'; index: number; arguments: string; choice?: number }
  | { type: 'usage'; usage: CanonicalUsage }
  | { type: 'end'; finishReason: FinishReason }
  | {
      type: 'error';
      code: string;
      message: string;
      /**
       * The provider said it is overloaded (Anthropic's `overloaded_error`): the call may succeed if retried.
       * A Messages client reads it as that error type, which Claude Code retries; others see the same code.
       */
      overloaded?: boolean;
    }
) & { native?: { protocol: WireProtocol; frame: unknown } };
