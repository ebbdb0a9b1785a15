/**
 * The error envelopes, one schema each: every route references these (never a copy), so the OpenAPI document
 * and the serializer agree on one shape per envelope, and clients read the same type.
 */
import Type, { type Static } from 'typebox';

/**
 * The error object inside the OpenAI-style envelope (contract §2.2, §7.2). Extra fields sit beside the three
 * required ones: a restriction's figures (see restrictions.ts), `param` naming the offending request field, a
 * limit in bytes. Open (`additionalProperties`), because the serializer would otherwise drop those fields.
 */
export const ApiErrorObjectSchema = Type.Object(
  {
    code: Type.String({ description: 'The Tollgate error code (README "Errors").' }),
    message: Type.String(),
    type: Type.String(),
    param: Type.Optional(Type.String({ description: 'The request field at fault, when there is one.' })),
  },
  { additionalProperties: true },
);

/** The error object of the OpenAI-style envelope. */
export type ApiErrorObject = Static<typeof ApiErrorObjectSchema>;

/** `{ error: { code, message, type, ... } }`: the envelope of `/api/v1/*` and of the reads (contract §2.2). */
export const ApiErrorSchema = Type.Object({ error: ApiErrorObjectSchema });

/** The OpenAI-style error envelope. */
export type ApiErrorEnvelope = Static<typeof ApiErrorSchema>;

/** `{ success: false, error: "<text>" }`: the envelope of the API-key routes (contract §7.1). */
export const KeysErrorSchema = Type.Object({ success: Type.Literal(false), error: Type.String() });

/** The API-key routes' error envelope. */
export type KeysErrorEnvelope = Static<typeof KeysErrorSchema>;

/** RFC 6749 §5.2's `{ error: "<code>", error_description: "<text>" }`: the envelope of the OAuth endpoints. */
export const OAuthErrorSchema = Type.Object({ error: Type.String(), error_description: Type.Optional(Type.String()) });

/** The OAuth endpoints' error envelope. */
export type OAuthErrorEnvelope = Static<typeof OAuthErrorSchema>;

/** Anthropic's error envelope, with our code and the contract's restriction fields inside `error`. */
export const AnthropicErrorSchema = Type.Object({
  type: Type.Literal('error'),
  error: Type.Object(
    {
      type: Type.String({
        description:
          "Anthropic's error type for the status (`invalid_request_error`, `billing_error`, `rate_limit_error`, …).",
      }),
      message: Type.String(),
      code: Type.String({ description: 'The Tollgate error code (README "Errors").' }),
    },
    {
      additionalProperties: true,
      description:
        'A 402 carries `available` and `required`; a 429 spending limit `limitType`, `limit`, `current`, `requested`, `resetsAt`.',
    },
  ),
});

/** The Anthropic Messages routes' error envelope. */
export type AnthropicErrorEnvelope = Static<typeof AnthropicErrorSchema>;
