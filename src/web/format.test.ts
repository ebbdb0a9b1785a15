import { it } from 'node:test';
import assert from 'node:assert/strict';
import { counted } from '../../web/dashboard/src/format.ts';

it('the dashboard counts in the singular for exactly one, else in the plural, with thousands separators', () => {
  assert.equal(counted(1, 'request'), '1 request');
  assert.equal(counted(0, 'request'), '0 requests');
  assert.equal(counted(2, 'request'), '2 requests');
  assert.equal(counted(1024, 'request'), '1,024 requests');
  assert.equal(counted(1, 'delivery', 'deliveries'), '1 delivery');
  assert.equal(counted(3, 'delivery', 'deliveries'), '3 deliveries');
});
