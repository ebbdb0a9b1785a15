import { errors, type ApiError } from '../../platform/errors.ts';
import { isOff, modelCallsOnly, type DefaultedToolField } from '../../gateway/tool-switches.ts';

/**
 * The Messages tool types other than a custom tool, and why each is refused on both wires (the `ToolUnion` of
 * @anthropic-ai/sdk 1.14 and its beta tools). A custom tool (no `type`, or `"custom"`) is accepted: its name,
 * description and schema are all the model reads of it, counted into the hold, and an OpenAI-compatible upstream
 * gets them as a function. So is Anthropic's web search tool `web_search_20250305`, on an Anthropic model that
 * prices a search, held for a bounded number of searches (`web-search.ts`); every other server tool is refused here.
 */

/**
 * Server tools: Anthropic runs them on its side and bills each use (web search), or puts what they fetch, run or
 * find into the prompt (web fetch, code execution, tool search, MCP), beyond the tokens the gateway holds for.
 */
const SERVER_TOOL =
  /^(?:(?:web_search|web_fetch|code_execution)_\d{8}|tool_search_tool_(?:bm25|regex)(?:_\d{8})?|mcp_toolset)$/;

/**
 * Anthropic-defined client tools: the client runs them, but Anthropic defines their input and adds their
 * definition and instructions to the prompt (hundreds of tokens the request does not show, so the hold does not
 * count them), and no OpenAI-compatible model knows them, so the translation would drop them.
 */
const ANTHROPIC_DEFINED_TOOL = /^(?:bash|text_editor|memory|computer|computer_toolset|browser_toolset)_\d{8}$/;

const INSTEAD = 'declare a custom tool (name, description, input_schema) and run it yourself';

/**
 * Web search versions after `web_search_20250305` (dynamic filtering) run Anthropic's code execution on the
 * results, a server tool whose blocks and container the gateway does not take; the earlier version searches alike.
 */
const LATER_WEB_SEARCH = /^web_search_\d{8}$/;

/**
 * The refusal (400 `UNSUPPORTED_PARAMETER`, `param` `tools[i].type`) of a tool of `type`, saying what it is and
 * what to send instead; a type the gateway does not know is refused too, never passed on unread.
 */
export function toolTypeRefusal(type: unknown, param: string): ApiError {
  const at = `${param}.type`;
  const named = `${at} ${JSON.stringify(type)}`;
  const message =
    typeof type === 'string' && LATER_WEB_SEARCH.test(type)
      ? `${named} is refused: this version filters its results by running Anthropic's code execution, a server tool the gateway does not accept; send type "web_search_20250305" (on a model of the anthropic provider that prices a search).`
      : typeof type === 'string' && SERVER_TOOL.test(type)
        ? `${named} is refused: it is a server tool, which Anthropic runs and bills per use or whose results enter the prompt beyond what the gateway holds for, and which no OpenAI-compatible model has; ${INSTEAD}.`
        : typeof type === 'string' && ANTHROPIC_DEFINED_TOOL.test(type)
          ? `${named} is refused: it is an Anthropic-defined client tool, whose definition Anthropic adds to the prompt uncounted by the hold, and which no OpenAI-compatible model has; ${INSTEAD}.`
          : `${named} is not a tool type Tollgate knows: only custom tools (no type, or "custom") and Anthropic's web search (web_search_20250305) are accepted; ${INSTEAD}.`;
  return errors.unsupported(at, message);
}

/**
 * Tool properties passed on either wire only at the value that changes nothing, and why another value is refused:
 * what they ask for needs a tool the gateway refuses (tool search, code execution), so a native call would fail
 * upstream after its hold and a translated one would silently behave otherwise. Custom tools and the web search
 * tool alike.
 */
export const DEFAULTED_TOOL_FIELDS: Readonly<Record<string, DefaultedToolField>> = {
  defer_loading: {
    harmless: isOff,
    why: 'a deferred tool is loaded through a tool search tool, which is a server tool the gateway refuses; send the tool without defer_loading',
  },
  allowed_callers: {
    harmless: modelCallsOnly,
    why: 'only the model calls tools here (code execution is a server tool the gateway refuses); leave it out or send ["direct"]',
  },
};
