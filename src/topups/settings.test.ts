import { test } from 'node:test';
import assert from 'node:assert/strict';
import Stripe from 'stripe';
import { paymentProviderError } from './settings.ts';

test("a Stripe error keeps Stripe's own message in the 502 (recognized without the module loading the package)", () => {
  const declined = new Stripe.errors.StripeCardError({ message: 'Your card was declined.', type: 'card_error' });
  const error = paymentProviderError(declined);
  assert.equal(error.code, 'PAYMENT_PROVIDER_ERROR');
  assert.equal(error.status, 502);
  assert.equal(error.message, 'Stripe refused the request: Your card was declined.');
});

test('any other failure (a network error) says Stripe could not be reached, and never echoes its text', () => {
  const error = paymentProviderError(new Error('connect ECONNREFUSED 10.0.0.1:443 sk_live_secret'));
  assert.equal(error.message, 'Stripe could not be reached; try again in a moment.');
});

test("the package's connection error is not told as Stripe refusing: the request never reached Stripe", () => {
  const unreachable = new Stripe.errors.StripeConnectionError({
    message: 'An error occurred with our connection to Stripe. Request was retried 2 times.',
  });
  const error = paymentProviderError(unreachable);
  assert.equal(error.status, 502);
  assert.equal(error.message, 'Stripe could not be reached; try again in a moment.');
});
