import { errors, type ApiError } from '../../platform/errors.ts';
import type { CanonicalCall } from '../../gateway/canonical.ts';
import type { CatalogueModel } from '../../models/catalogue.ts';
import { DEFAULTED_TOOL_FIELDS } from './tool-types.ts';
import { MessagesConfigSection, type MessagesConfig } from './config.ts';

/**
 * Anthropic's web search server tool on the Messages route: Anthropic runs the searches, bills each one
 * (`usage.server_tool_use.web_search_requests`, priced at the model's `pricing.webSearch`) and bills the results the
 * model reads as input tokens. Decisions, each kept here:
 *
 * - Only `web_search_20250305` is accepted. The later versions of the SDK's `ToolUnion` (`web_search_20260209`,
 *   `web_search_20260318`) filter their results by running Anthropic's code execution, a server tool the gateway
 *   refuses (its blocks, its container), so they stay refused by `tool-types.ts`, saying to send this version.
 * - Only on a model of the `anthropic` provider (the body reaches it as sent; no other upstream has the tool) whose
 *   catalogue entry prices a search (`pricing.webSearch` above 0): otherwise the call is refused before any hold,
 *   saying which of the two is missing ({@link serverToolRefusal}).
 * - Bounded: the upstream receives a `max_uses` on every web search tool: `WEB_SEARCH_DEFAULT_MAX_USES` when the
 *   client sent none, and a larger one is lowered to `WEB_SEARCH_MAX_USES` (the model gets Anthropic's
 *   `max_uses_exceeded` result past it and answers with what it found, rather than the client a 400). The call is
 *   held for that many searches in full, plus `WEB_SEARCH_HOLD_TOKENS` input tokens each (`callWorstCase`).
 * - A conversation replaying an earlier answer's `server_tool_use` and `web_search_tool_result` blocks (and text
 *   `citations`) is accepted for an Anthropic model: the blocks pass as sent and their JSON is counted into the
 *   hold as input (the encrypted results tokenize to more tokens than the page text they stand for, an
 *   over-estimate; an under-estimate would only move money to `uncollected`). Another model refuses them, naming
 *   the block: it would read neither the search nor its results. A replayed search without its result (to be
 *   continued after `pause_turn`) is one more search held for, and needs a priced Anthropic model as the tool does.
 */

/** The web search tool version accepted. */
export const WEB_SEARCH_TOOL_TYPE = 'web_search_20250305';

/** How many searches a call may run and how much each is held for (the Messages config section). */
export type WebSearchLimits = Pick<
  MessagesConfig,
  'WEB_SEARCH_DEFAULT_MAX_USES' | 'WEB_SEARCH_MAX_USES' | 'WEB_SEARCH_HOLD_TOKENS'
>;

/** A setting's default, as the configuration schema gives it. */
const defaultOf = (key: keyof WebSearchLimits): number =>
  (MessagesConfigSection.properties[key] as { default?: unknown }).default as number;

/** The configuration's defaults (read from its schema), for a parse without a configuration (unit tests). */
export const DEFAULT_WEB_SEARCH_LIMITS: WebSearchLimits = {
  WEB_SEARCH_DEFAULT_MAX_USES: defaultOf('WEB_SEARCH_DEFAULT_MAX_USES'),
  WEB_SEARCH_MAX_USES: defaultOf('WEB_SEARCH_MAX_USES'),
  WEB_SEARCH_HOLD_TOKENS: defaultOf('WEB_SEARCH_HOLD_TOKENS'),
};

/** True for a tool of the accepted web search type. */
export function isWebSearchTool(tool: Record<string, unknown>): boolean {
  return tool.type === WEB_SEARCH_TOOL_TYPE;
}

/**
 * The web search tool's own fields, passed as sent (each changes which results come back, not how many): its
 * name, `max_uses` (set or lowered, see the module comment), the domain lists, the user's location, a cache marker
 * (checked by the parser) and `strict`. `defer_loading` and `allowed_callers` only at their harmless value.
 */
const FIELDS: ReadonlySet<string> = new Set([
  'type',
  'name',
  'max_uses',
  'allowed_domains',
  'blocked_domains',
  'user_location',
  'cache_control',
  'strict',
]);

const invalid = (param: string, message: string): ApiError => errors.invalid(message, { param });

function domains(value: unknown, param: string): void {
  if (value === undefined || value === null) return;
  if (!Array.isArray(value) || !value.every((domain) => typeof domain === 'string'))
    throw invalid(param, `${param} must be an array of domain names.`);
}

/**
 * The web search tools of a request's `tools`: the tools as the upstream gets them (`max_uses` set on each) and
 * the searches they allow together; null when there is none. 400 for a field the tool does not have or a value of
 * the wrong type; the cache marker is checked by the parser.
 */
export function webSearchTools(
  tools: unknown,
  limits: WebSearchLimits,
): { tools: unknown[]; maxUses: number; names: string[] } | null {
  if (!Array.isArray(tools)) return null;
  let maxUses = 0;
  const names: string[] = [];
  const sent = (tools as Array<Record<string, unknown>>).map((tool, i) => {
    if (!tool || typeof tool !== 'object' || !isWebSearchTool(tool)) return tool;
    const param = `tools[${i}]`;
    if (tool.name !== 'web_search')
      throw invalid(`${param}.name`, `${param}.name must be "web_search" for a tool of type ${WEB_SEARCH_TOOL_TYPE}.`);
    for (const [field, rule] of Object.entries(DEFAULTED_TOOL_FIELDS)) {
      if (tool[field] === undefined || rule.harmless(tool[field])) continue;
      throw errors.unsupported(`${param}.${field}`, `${param}.${field} is refused: ${rule.why}.`);
    }
    const extra = Object.keys(tool).find(
      (key) => !FIELDS.has(key) && !(key in DEFAULTED_TOOL_FIELDS) && tool[key] !== undefined,
    );
    if (extra)
      throw errors.unsupported(
        `${param}.${extra}`,
        `${param}.${extra} is not accepted on the web search tool (its fields are ${[...FIELDS].join(', ')}).`,
      );
    domains(tool.allowed_domains, `${param}.allowed_domains`);
    domains(tool.blocked_domains, `${param}.blocked_domains`);
    const location = tool.user_location;
    if (location !== undefined && location !== null && (typeof location !== 'object' || Array.isArray(location)))
      throw invalid(`${param}.user_location`, `${param}.user_location must be an object ({ type: "approximate", … }).`);
    const asked = tool.max_uses;
    if (asked !== undefined && asked !== null && !(Number.isSafeInteger(asked) && (asked as number) >= 1))
      throw invalid(`${param}.max_uses`, `${param}.max_uses must be a whole number of searches, 1 or more.`);
    const uses = Math.min(
      typeof asked === 'number' ? asked : limits.WEB_SEARCH_DEFAULT_MAX_USES,
      limits.WEB_SEARCH_MAX_USES,
    );
    maxUses += uses;
    names.push(String(tool.name));
    return uses === asked ? tool : { ...tool, max_uses: uses };
  });
  return names.length ? { tools: sent, maxUses, names } : null;
}

/**
 * A replayed `server_tool_use` or `web_search_tool_result` block (an earlier answer's, sent back in the assistant
 * turn): checked for its shape, passed as sent in the native body and counted by {@link nativeInputOf}; no
 * canonical part (no other upstream can read it, {@link serverToolRefusal}). A `server_tool_use` of another
 * server tool is refused, as that tool is.
 */
export function checkReplayedBlock(block: Record<string, unknown>, param: string): void {
  if (block.type === 'server_tool_use') {
    if (typeof block.id !== 'string')
      throw invalid(`${param}.id`, `${param}.id must be the string id of the server tool use.`);
    if (block.name !== 'web_search')
      throw errors.unsupported(
        `${param}.name`,
        `${param}: a server_tool_use of ${JSON.stringify(block.name)} is refused: web search is the only server tool accepted.`,
      );
    if (block.input === null || typeof block.input !== 'object' || Array.isArray(block.input))
      throw invalid(`${param}.input`, `${param}.input must be an object.`);
    return;
  }
  if (typeof block.tool_use_id !== 'string')
    throw invalid(`${param}.tool_use_id`, `${param}.tool_use_id must be a string.`);
  if (block.content === null || typeof block.content !== 'object')
    throw invalid(
      `${param}.content`,
      `${param}.content must be the search's results (an array of web_search_result) or its error object.`,
    );
}

/** The block types {@link checkReplayedBlock} takes. */
export const REPLAYED_BLOCKS: ReadonlySet<string> = new Set(['server_tool_use', 'web_search_tool_result']);

/**
 * What a body replays of earlier web searches, in one pass over its blocks:
 * - `nativeInput`: the input only an Anthropic upstream reads, as texts for the hold's count: every replayed
 *   server-tool block whole (its JSON: the query, the encrypted results), the `citations` of text blocks, and the
 *   web search tools' definitions (Anthropic adds the tool to the prompt);
 * - `pending`: replayed `server_tool_use` blocks without their `web_search_tool_result` (an answer that stopped with
 *   `pause_turn` mid-search, sent back to be continued): Anthropic runs each such search in this call, so each is
 *   held for and needs what a search needs (an Anthropic model that prices it), as the tool's own searches do.
 */
export function replayedSearches(
  body: Record<string, unknown>,
  tools: unknown[] | undefined,
): { nativeInput: string[]; pending: number } {
  const nativeInput: string[] = [];
  for (const tool of tools ?? [])
    if (tool && typeof tool === 'object' && isWebSearchTool(tool as Record<string, unknown>))
      nativeInput.push(JSON.stringify(tool));
  const uses = new Set<string>();
  const results = new Set<string>();
  const messages = Array.isArray(body.messages) ? (body.messages as Array<{ content?: unknown }>) : [];
  for (const message of messages) {
    if (!Array.isArray(message?.content)) continue;
    for (const block of message.content as Array<Record<string, unknown>>) {
      if (REPLAYED_BLOCKS.has(block?.type as string)) {
        nativeInput.push(JSON.stringify(block));
        if (block.type === 'server_tool_use') uses.add(String(block.id));
        else results.add(String(block.tool_use_id));
      } else if (block?.type === 'text' && Array.isArray(block.citations) && block.citations.length)
        nativeInput.push(JSON.stringify(block.citations));
    }
  }
  let pending = 0;
  for (const id of uses) if (!results.has(id)) pending++;
  return { nativeInput, pending };
}

/** Where a body first uses what only Anthropic runs: a web search tool, or else a replayed server-tool block. */
function firstServerUse(body: Record<string, unknown>): { param: string; what: string } | null {
  const tools = Array.isArray(body.tools) ? (body.tools as Array<Record<string, unknown>>) : [];
  const index = tools.findIndex((tool) => tool && isWebSearchTool(tool));
  if (index >= 0) return { param: `tools[${index}].type`, what: `tools[${index}].type "${WEB_SEARCH_TOOL_TYPE}"` };
  const messages = Array.isArray(body.messages) ? (body.messages as Array<{ content?: unknown }>) : [];
  for (const [m, message] of messages.entries()) {
    if (!Array.isArray(message?.content)) continue;
    for (const [b, block] of (message.content as Array<Record<string, unknown>>).entries())
      if (REPLAYED_BLOCKS.has(block?.type as string)) {
        const param = `messages[${m}].content[${b}]`;
        return { param, what: `${param} (a ${String(block.type)} block)` };
      }
  }
  return null;
}

/**
 * Why a model cannot take a call that uses Anthropic's web search (the tool, or its replayed blocks), or null;
 * undefined when the call uses none. Refused, before any hold: a model whose provider is not `anthropic` (no other
 * upstream runs the tool or reads its blocks), and, for the tool, a model without a `pricing.webSearch` above 0
 * (a search could not be held for nor charged). A fallback refusing is left out of the call.
 */
export function serverToolRefusal(call: CanonicalCall): ((model: CatalogueModel) => ApiError | null) | undefined {
  const body = call.native?.body;
  const use = body && (call.webSearch || call.nativeInput?.length) ? firstServerUse(body) : null;
  if (!use) return undefined;
  return (model) => {
    if (model.provider !== 'anthropic')
      return errors.unsupported(
        use.param,
        `${use.what} is refused on "${model.id}": Anthropic's web search runs only on a model of the anthropic provider, and this model's provider is "${model.provider}".`,
      );
    if (call.webSearch && !((model.pricing.webSearch ?? 0) > 0))
      return errors.unsupported(
        use.param,
        `${use.what} is refused on "${model.id}": the model has no web search price, so a search could be neither held for nor charged; the operator sets pricing.webSearch (credits per search) on the model to allow it.`,
      );
    return null;
  };
}
