/**
 * Shapes of the gateway's responses the SDK reads (contract §2, §4; decisions.md "Reads that the contract leaves
 * open"). The reads are the gateway's own wire types (@tollgate/wire), imported as types only.
 */
import type { AppLimit, AuthorizedApp, Balance, User } from '@tollgate/wire';

/** `GET /api/user/me`. */
export type TollgateUser = User;

/** `GET /api/wallet/balance`; amounts in credits. */
export type TollgateBalance = Balance;

/** One spending limit of an authorized app, in credits; `resetsAt` is null for a `total` limit. */
export type { AppLimit };

/** One entry of `GET /api/user/authorized-apps`. */
export type { AuthorizedApp };

/** A chat message sent: text, or content parts (text, images…); fields beyond these (`tool_calls`, `tool_call_id`, `name`) pass through. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool' | (string & {});
  content: string | Array<{ type: string; [field: string]: unknown }> | null;
  [field: string]: unknown;
}

/** The message of a chat completion: its text, or null when the model answered with tool calls only. */
export interface ChatCompletionMessage {
  role: 'assistant' | (string & {});
  content: string | null;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  [field: string]: unknown;
}

/** The body of `POST /api/v1/chat/completions` (OpenAI-compatible; fields beyond these pass through). */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  max_tokens?: number;
  temperature?: number;
  [field: string]: unknown;
}

/** A chat completion (contract §2.3: the text is at `choices[0].message.content`). */
export interface ChatCompletion {
  id: string;
  model: string;
  choices: Array<{ index: number; message: ChatCompletionMessage; finish_reason: string | null }>;
  usage?: ChatUsage;
  [field: string]: unknown;
}

/** What a chat call used and was charged, as Tollgate answers it (OpenRouter's usage accounting). */
export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  /** Tollgate's own answers carry it; an upstream's pass-through answer may not (the OpenAPI document has it optional). */
  total_tokens?: number;
  /** Input tokens read from (`cached_tokens`) and written to (`cache_write_tokens`) the prompt cache, and audio input; all inside `prompt_tokens`. */
  prompt_tokens_details?: {
    cached_tokens?: number;
    cache_write_tokens?: number;
    audio_tokens?: number;
    [field: string]: unknown;
  };
  /** Reasoning and audio output tokens, inside `completion_tokens`. */
  completion_tokens_details?: { reasoning_tokens?: number; audio_tokens?: number; [field: string]: unknown };
  /** Credits charged for the call. */
  cost?: number;
  [field: string]: unknown;
}

/** The tokens the SDK keeps; `expiresAt` is epoch milliseconds. */
export interface TollgateTokens {
  accessToken: string;
  refreshToken?: string;
  expiresAt: number;
  scope: string;
  tokenType: string;
}
