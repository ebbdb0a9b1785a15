import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { newId } from './ids.ts';

describe('ids', () => {
  it('are the prefix and 20 url-safe characters, unique across many', () => {
    const ids = Array.from({ length: 20_000 }, () => newId('hold'));
    for (const id of ids.slice(0, 100)) assert.match(id, /^hold_[0-9A-Za-z]{20}$/);
    assert.equal(new Set(ids).size, ids.length);
  });

  it('sort as text in the order they were made, a millisecond apart or more', async () => {
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      made.push(newId('txn'));
      await sleep(2);
    }
    assert.deepEqual([...made].sort(), made);
    // Byte order, as SQLite and PostgreSQL's "C" collation compare: no locale rules involved.
    assert.deepEqual(
      [...made].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))),
      made,
    );
  });
});
