/**
 * The nested fields of chat's `tools` and `tool_choice` (README "Pass-through allow-list").
 *
 * An OpenAI-compatible upstream gets the body as sent (the tools' whole JSON is counted into the hold), but only
 * with tools the client runs (`function`, `custom`): a tool of another type runs on the provider's side, billed per
 * use (OpenRouter's server tools `openrouter:web_search`, `openrouter:image_generation`…), which no hold bounds.
 *
 * The Anthropic translation carries a function tool's `name`, `description`, `parameters` and `strict`, and the
 * tool choices `auto`, `none`, `required` and one function by name; anything else in them would be dropped unread,
 * and the model would answer a different call than the one sent. So it is refused by name instead, with what to
 * send.
 */

/** Tool types an OpenAI-compatible upstream receives: the ones the client runs itself. */
const CLIENT_TOOL_TYPES: ReadonlySet<unknown> = new Set(['function', 'custom']);
/** Tool choice types that name such tools (or a subset of the request's tools). */
const CLIENT_CHOICE_TYPES: ReadonlySet<unknown> = new Set(['function', 'custom', 'allowed_tools']);

/** What the translation reads of a tool and of its `function`. */
const TOOL_FIELDS: ReadonlySet<string> = new Set(['type', 'function']);
const FUNCTION_FIELDS: ReadonlySet<string> = new Set(['name', 'description', 'parameters', 'strict']);
const CHOICE_FIELDS: ReadonlySet<string> = new Set(['type', 'function']);
const CHOICE_FUNCTION_FIELDS: ReadonlySet<string> = new Set(['name']);

/** A nested field the Anthropic translation cannot carry: its path (`tools[2].function.defer_loading`) and why. */
export interface NestedFieldProblem {
  field: string;
  message: string;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The first key of `object` off `allowed` that has a value, or undefined. */
function extraKey(object: Record<string, unknown>, allowed: ReadonlySet<string>): string | undefined {
  return Object.keys(object).find((key) => !allowed.has(key) && object[key] !== undefined && object[key] !== null);
}

const noForm = (field: string, what: string): NestedFieldProblem => ({
  field,
  message: `The field "${field}" is refused: ${what}.`,
});

/** Those same types keep their definition under a key of the type's name (`{ type: "function", function: {…} }`). */
const NAMED_TOOL_TYPES = CLIENT_TOOL_TYPES;

/**
 * The first malformed tool or tool choice of the chat body, or null: `tools` that is not a list, an entry that is
 * not an object, a `function` (or `custom`) tool or tool choice without its `function` object or without a
 * non-empty `name` in it, a function tool choice naming none of the tools, `"required"` with no tools. Every
 * provider needs these, so they are a client's mistake (400 `INVALID_REQUEST`) before anything is held: the Anthropic translation would otherwise leave the tool or the choice out unread (the
 * model answering without it), and an OpenAI-compatible upstream would refuse the call only after the hold.
 */
export function malformedToolProblem(body: Record<string, unknown>): NestedFieldProblem | null {
  const tools = body.tools;
  if (tools !== undefined && tools !== null && !Array.isArray(tools))
    return { field: 'tools', message: 'The field "tools" must be a list of tools, e.g. [{ "type": "function", … }].' };
  const list: unknown[] = Array.isArray(tools) ? tools : [];
  for (let i = 0; i < list.length; i++) {
    const tool = list[i];
    const at = `tools[${i}]`;
    if (!isObject(tool))
      return {
        field: at,
        message: `${at} must be a tool object, e.g. { "type": "function", "function": { "name" } }.`,
      };
    const problem = unnamed(tool, at, 'every tool needs the name the model calls it by');
    if (problem) return problem;
  }
  const choice = body.tool_choice;
  if (isObject(choice)) {
    const problem = unnamed(choice, 'tool_choice', 'a tool choice names the tool the model must call');
    if (problem) return problem;
  }
  return choiceWithoutToolProblem(choice, list);
}

/**
 * A `tool_choice` that no tool of the body can answer: a function choice naming none of the tools, or `"required"`
 * with no tools. OpenAI refuses both (after the hold, had it been sent), and the Anthropic translation would send a
 * choice Anthropic refuses; the client's fix is to add the tool or correct the name.
 */
function choiceWithoutToolProblem(choice: unknown, tools: unknown[]): NestedFieldProblem | null {
  if (choice === 'required' && tools.length === 0) {
    return {
      field: 'tool_choice',
      message: 'tool_choice "required" needs tools, and the request has none: send "tools", or leave tool_choice out.',
    };
  }
  if (!isObject(choice) || choice.type !== 'function' || !isObject(choice.function)) return null;
  const name = choice.function.name;
  // A custom tool's name counts too: whether a function choice may pick one is the upstream's to say.
  const names = tools.flatMap((tool) => {
    const definition = isObject(tool) && NAMED_TOOL_TYPES.has(tool.type) ? tool[String(tool.type)] : undefined;
    return isObject(definition) ? [String(definition.name)] : [];
  });
  if (names.includes(String(name))) return null;
  const among = names.length
    ? `the tools are named ${names.map((n) => JSON.stringify(n)).join(', ')}`
    : 'the request has no tools';
  return {
    field: 'tool_choice.function.name',
    message: `tool_choice.function.name names ${JSON.stringify(name)}, which is not among the tools (${among}): name one of them, or add the tool.`,
  };
}

/** A `function` or `custom` tool (or tool choice) at `at` without its object or a non-empty name in it. */
function unnamed(tool: Record<string, unknown>, at: string, why: string): NestedFieldProblem | null {
  if (!NAMED_TOOL_TYPES.has(tool.type)) return null;
  const kind = String(tool.type);
  const definition = tool[kind];
  if (!isObject(definition)) {
    return {
      field: `${at}.${kind}`,
      message: `${at}.${kind} is missing: send { "type": "${kind}", "${kind}": { "name": … } }.`,
    };
  }
  if (typeof definition.name === 'string' && definition.name !== '') return null;
  return { field: `${at}.${kind}.name`, message: `${at}.${kind}.name is missing or empty: ${why}.` };
}

/**
 * The first tool (or tool choice) of the chat body that an OpenAI-compatible upstream would run on its own side,
 * billed per use beyond the hold, or null when every tool is one the client runs.
 */
export function providerToolsProblem(body: Record<string, unknown>): NestedFieldProblem | null {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const serverTool = (type: unknown) =>
    `a tool of type ${JSON.stringify(type)} runs on the provider's side and is billed per use, beyond what the gateway holds for; declare a "function" tool and run it yourself`;
  for (let i = 0; i < tools.length; i++) {
    const tool: unknown = tools[i];
    if (isObject(tool) && !CLIENT_TOOL_TYPES.has(tool.type)) return noForm(`tools[${i}].type`, serverTool(tool.type));
  }
  const choice = body.tool_choice;
  if (isObject(choice) && !CLIENT_CHOICE_TYPES.has(choice.type))
    return noForm('tool_choice.type', serverTool(choice.type));
  return null;
}

/**
 * The first nested field of the chat body's `tools` or `tool_choice` that an Anthropic upstream cannot receive,
 * or null when the translation carries them all.
 */
export function anthropicToolsProblem(body: Record<string, unknown>): NestedFieldProblem | null {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  for (let i = 0; i < tools.length; i++) {
    const tool: unknown = tools[i];
    const at = `tools[${i}]`;
    if (!isObject(tool)) continue;
    if (tool.type !== 'function') {
      return noForm(
        `${at}.type`,
        `a tool of type ${JSON.stringify(tool.type)} has no form on Anthropic models (free-form custom tools take no JSON Schema); declare it as a "function" tool with parameters`,
      );
    }
    const extra = extraKey(tool, TOOL_FIELDS);
    if (extra)
      return noForm(`${at}.${extra}`, 'Anthropic models take a function tool\'s "function" only; leave it out');
    const fn = tool.function;
    if (!isObject(fn)) continue;
    const inner = extraKey(fn, FUNCTION_FIELDS);
    if (inner) {
      return noForm(
        `${at}.function.${inner}`,
        'a function tool reaches Anthropic models with its name, description, parameters and strict only, and this field would be dropped; leave it out or call an OpenAI-compatible model',
      );
    }
  }
  return toolChoiceProblem(body.tool_choice);
}

function toolChoiceProblem(choice: unknown): NestedFieldProblem | null {
  if (choice === undefined || choice === null || choice === 'auto' || choice === 'none' || choice === 'required')
    return null;
  if (!isObject(choice)) {
    return noForm(
      'tool_choice',
      `${JSON.stringify(choice)} is not a tool choice; use "auto", "none", "required" or { "type": "function", "function": { "name" } }`,
    );
  }
  if (choice.type === 'allowed_tools') {
    return noForm(
      'tool_choice',
      'an "allowed_tools" choice has no form on Anthropic models; send only the allowed tools in "tools", with tool_choice "auto" or "required"',
    );
  }
  if (choice.type !== 'function') {
    return noForm(
      'tool_choice.type',
      `a tool choice of type ${JSON.stringify(choice.type)} has no form on Anthropic models; name a function tool: { "type": "function", "function": { "name" } }`,
    );
  }
  const extra = extraKey(choice, CHOICE_FIELDS);
  if (extra) return noForm(`tool_choice.${extra}`, 'a function tool choice takes its "function" only; leave it out');
  const fn = isObject(choice.function) ? choice.function : {};
  const inner = extraKey(fn, CHOICE_FUNCTION_FIELDS);
  if (inner) return noForm(`tool_choice.function.${inner}`, 'a function tool choice names the function only');
  return null;
}
