import Type, { type Static } from 'typebox';

/**
 * The Messages API's settings: how many web searches a call may run and how much each is held for. Part of the
 * one configuration schema (src/config.ts). Anthropic bills each search and the pages it reads as input, so a
 * call with the web search tool is held for a bounded number of searches (`web-search.ts`).
 */
export const MessagesConfigSection = Type.Object({
  WEB_SEARCH_DEFAULT_MAX_USES: Type.Integer({
    minimum: 1,
    maximum: 100,
    default: 5,
    description:
      'Messages: the `max_uses` Tollgate sets on a web search tool sent without one (the upstream runs at most that many searches, and the call is held for them).',
  }),
  WEB_SEARCH_MAX_USES: Type.Integer({
    minimum: 1,
    maximum: 100,
    default: 10,
    description:
      "Messages: the most searches one call may run: a web search tool's larger `max_uses` is lowered to it in the body sent upstream.",
  }),
  WEB_SEARCH_HOLD_TOKENS: Type.Integer({
    minimum: 0,
    maximum: 1_000_000,
    default: 20_000,
    description:
      "Messages: input tokens held per allowed search for the results it brings into the prompt (billed by Anthropic as input), at the model's highest input price.",
  }),
});

/** This section, parsed. */
export type MessagesConfig = Static<typeof MessagesConfigSection>;
