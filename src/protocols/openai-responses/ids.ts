import { randomText } from '../../platform/ids.ts';

/**
 * Ids of responses and their output items. An item id carries its response's id (`msg_<r>_<n>` for
 * `resp_<r>`), so an `item_reference` names the stored response that holds it: resolving one is a read by
 * primary key under the caller's ownership, never a search through someone's items.
 */

const RESPONSE_ID = /^resp_([A-Za-z0-9]{24})$/;
const ITEM_ID = /^(?:msg|fc|rs)_([A-Za-z0-9]{24})_\d{1,4}$/;

/** A new response id, `resp_` and 24 random url-safe characters. */
export function newResponseId(): string {
  return `resp_${randomText(24)}`;
}

/** The id of the `index`-th output item of a response, by kind. */
export function itemId(responseId: string, kind: 'msg' | 'fc' | 'rs', index: number): string {
  return `${kind}_${responseId.slice('resp_'.length)}_${index}`;
}

/** True for a well-formed response id (anything else is a 404 without a database read). */
export function isResponseId(id: string): boolean {
  return RESPONSE_ID.test(id);
}

/** The response an output item id belongs to, or null when the id is not one of ours. */
export function responseOfItem(id: string): string | null {
  const match = ITEM_ID.exec(id);
  return match ? `resp_${match[1]}` : null;
}
