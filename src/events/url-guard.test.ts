import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { isPrivateAddress } from './url-guard.ts';
import { sendAttempt } from './send.ts';
import { WebhookReceiver } from './testing/receiver.ts';

const receiver = new WebhookReceiver();
before(() => receiver.start());
after(() => receiver.stop());

it('classifies loopback, private, link-local, shared, mapped and reserved addresses as private, public ones as not', () => {
  for (const address of [
    '127.0.0.1',
    '10.0.0.1',
    '172.31.255.255',
    '192.168.0.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    '::',
    'fe80::1',
    'fd12::1',
    '::ffff:10.0.0.1',
    '::ffff:7f00:1',
    '2002:7f00:1::',
    '224.0.0.1',
  ]) {
    assert.equal(isPrivateAddress(address), true, address);
  }
  for (const address of ['93.184.215.14', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8']) {
    assert.equal(isPrivateAddress(address), false, address);
  }
});

it('IPv6 forms that embed an IPv4 address (IPv4-compatible ::a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d) and site-local fec0::/10 are private', () => {
  // A stack that routes these (SIIT, an old dual-stack or a site-local network) would reach the address inside.
  for (const address of ['::7f00:1', '::127.0.0.1', '::a9fe:a9fe', '::ffff:0:7f00:1', '::ffff:0:a00:1', 'fec0::1']) {
    assert.equal(isPrivateAddress(address), true, address);
  }
  assert.equal(isPrivateAddress('2606:4700::1111'), false);
});

it('at connect time, a host that resolves to a private address is refused and nothing is sent (DNS rebinding)', async () => {
  receiver.received.length = 0;
  const port = new URL(receiver.url).port;
  const policy = { allowHttp: true, allowPrivate: false };
  const byName = await sendAttempt(`http://localhost:${port}/hook`, {}, Buffer.from('{}'), 2000, policy);
  assert.equal(byName.status, null);
  assert.match(byName.error!, /refused/);
  const byLiteral = await sendAttempt(`http://127.0.0.1:${port}/hook`, {}, Buffer.from('{}'), 2000, policy);
  assert.match(byLiteral.error!, /refused/);
  const insecure = await sendAttempt(`http://127.0.0.1:${port}/hook`, {}, Buffer.from('{}'), 2000, {
    allowHttp: false,
    allowPrivate: true,
  });
  assert.match(insecure.error!, /refused/);
  assert.equal(receiver.received.length, 0);
  // The same sender reaches it when the operator allows private addresses (the tests' setting).
  const allowed = await sendAttempt(`http://localhost:${port}/hook`, {}, Buffer.from('{}'), 2000, {
    allowHttp: true,
    allowPrivate: true,
  });
  assert.equal(allowed.status, 200);
  assert.equal(receiver.received.length, 1);
});
