import { errors, type ApiError } from '../../platform/errors.ts';

/**
 * The Responses tool types other than `function` and `namespace`, and why each is refused: the gateway reaches
 * every upstream through a translation to chat completions or Anthropic Messages, whose tools are functions with
 * JSON arguments.
 */

const unsupported = errors.unsupported;

/**
 * OpenAI's built-in tools (the `Tool` union of openai 7.59): OpenAI defines them and, for most, runs them on its side
 * at a per-use price; even those the client executes (`local_shell`, `shell`, `apply_patch`, `computer`) have calls
 * of their own item types, which exist only on OpenAI's own Responses API. Every upstream here is reached through a
 * translation to chat completions or Anthropic Messages, where none of them has a form.
 */
export const BUILT_IN_TOOL_TYPES: ReadonlySet<unknown> = new Set([
  'file_search',
  'computer',
  'computer_use_preview',
  'web_search',
  'web_search_2025_08_26',
  'web_search_preview',
  'web_search_preview_2025_03_11',
  'mcp',
  'code_interpreter',
  'programmatic_tool_calling',
  'image_generation',
  'local_shell',
  'shell',
  'tool_search',
  'apply_patch',
]);

/**
 * Why a tool of a type other than `function` (or `namespace`, at the top) is refused, with what to do: a `custom`
 * tool is the client's own, but takes free-form text (or a grammar) where every translation takes JSON arguments; a
 * built-in tool is OpenAI's; any other type is not one the gateway knows, and is never passed on unread.
 */
export function toolTypeRefusal(type: unknown, param: string, builtIns: string[]): ApiError {
  const at = `${param}.type`;
  if (type === 'custom') {
    return unsupported(
      at,
      `${at} "custom" is refused: a custom tool is one your client runs, but its input is free-form text (or a grammar), and the upstreams are reached through chat completions or Anthropic Messages tools, which take JSON arguments. Declare it as a "function" tool with "parameters" (e.g. one string property for the text).`,
    );
  }
  if (BUILT_IN_TOOL_TYPES.has(type)) {
    return unsupported(
      at,
      `${at} ${JSON.stringify(type)} is refused: built-in tools are not supported (${builtIns.join(', ')}); they are OpenAI's own, run or billed on its side or answered in item types only its Responses API has, and no upstream here has them. Declare a "function" tool with "parameters" and run it yourself.`,
    );
  }
  return unsupported(
    at,
    `${at} ${type === undefined ? 'is missing' : `${JSON.stringify(type)} is not a tool type Tollgate knows`}: only "function" tools (and "namespace" tools grouping them) are supported, which the client runs. Declare it as a "function" tool with "parameters".`,
  );
}
