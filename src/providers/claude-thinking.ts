/**
 * How each Claude generation takes thinking (Anthropic's "Extended thinking" and "Adaptive thinking", 2026), read
 * from the upstream model id: the translation of an OpenAI effort (`providers/reasoning.ts`) and the chat/Responses
 * refusals of what Anthropic does not combine with thinking both depend on it.
 *
 * - Before Claude 3.7 Sonnet no model thinks (`none`).
 * - Claude 3.7 Sonnet, 4, 4.1 and 4.5 take only `thinking: { type: "enabled", budget_tokens }` (≥ 1024, below
 *   `max_tokens`) and no `output_config.effort` (`budget`; Opus 4.5 had the effort behind a beta header, which is
 *   not forwarded, so it is treated as its generation).
 * - Claude 4.6 introduced `thinking: { type: "adaptive" }` with `output_config.effort`; it still takes a budget,
 *   deprecated (`adaptive`).
 * - Claude Opus 4.7 and later, and every Claude 5 model, take adaptive thinking only: a budget is a 400 there
 *   (`adaptive-only`). An id that does not parse is taken as this newest kind, since new models come out faster
 *   than this table is updated.
 */

/** A Claude model's version, as its id names it: `claude-opus-4-7` is 4.7 Opus, `claude-3-opus-20240229` 3.0 Opus. */
export interface ClaudeGeneration {
  major: number;
  minor: number;
  /** The model line (`opus`, `sonnet`, `haiku`, `fable`, `instant`…), when the id names one. */
  family: string | null;
}

/** How a Claude model takes thinking (see the module's comment). */
export type ClaudeThinking = 'none' | 'budget' | 'adaptive' | 'adaptive-only';

/**
 * The ids since Claude 4: the line, then the version, with `-` or `.` between major and minor (`claude-sonnet-4-5`,
 * `claude-sonnet-4.6`, `claude-opus-5`). A minor is at most two digits, so a date snapshot (`-20250514`) is not one.
 */
const FAMILY_FIRST = /(?:^|[^a-z0-9])claude-([a-z]+)-(\d{1,2})(?:[.-](\d{1,2}))?(?!\d)/;
/** The ids up to Claude 3.7: the version, then the line (`claude-3-7-sonnet-20250219`, `claude-3-opus`, `claude-2.1`). */
const VERSION_FIRST = /(?:^|[^a-z0-9])claude-(\d{1,2})(?:[.-](\d{1,2}))?(?!\d)(?:-([a-z]+))?/;
/** Bedrock's first Claude ids (`anthropic.claude-v2:1`, `anthropic.claude-instant-v1`). */
const BEDROCK_LEGACY = /(?:^|[^a-z0-9])claude-(instant-)?v(\d{1,2})/;

/**
 * The generation of a Claude model from its upstream id, as Anthropic, OpenRouter (`anthropic/claude-…`), Bedrock
 * (`us.anthropic.claude-…-v1:0`) and Vertex (`claude-…@20250929`) spell it; null when the id names no Claude version.
 */
export function claudeGeneration(model: string): ClaudeGeneration | null {
  const id = model.toLowerCase();
  const familyFirst = FAMILY_FIRST.exec(id);
  if (familyFirst)
    return { major: Number(familyFirst[2]), minor: Number(familyFirst[3] ?? 0), family: familyFirst[1]! };
  const versionFirst = VERSION_FIRST.exec(id);
  if (versionFirst)
    return { major: Number(versionFirst[1]), minor: Number(versionFirst[2] ?? 0), family: versionFirst[3] ?? null };
  const legacy = BEDROCK_LEGACY.exec(id);
  if (legacy) return { major: Number(legacy[2]), minor: 0, family: legacy[1] ? 'instant' : null };
  return null;
}

/** How the model of this upstream id takes thinking; an id that does not parse is the newest kind (adaptive only). */
export function claudeThinkingOf(model: string): ClaudeThinking {
  const generation = claudeGeneration(model);
  if (!generation) return 'adaptive-only';
  const version = generation.major * 100 + generation.minor;
  if (version < 307) return 'none';
  if (version < 406) return 'budget';
  if (version < 407) return 'adaptive';
  return 'adaptive-only';
}
