/**
 * Credits in the API are JSON numbers with at most 6 decimals; storage and arithmetic use integer
 * micro-credits (1 credit = 1,000,000). No floating point touches the ledger: conversion happens only at
 * the edge, here.
 */
export const MICROS_PER_CREDIT = 1_000_000;

/**
 * The most credits an amount can be: 2^33 = 8,589,934,592, the largest bound up to which every amount with at
 * most 6 decimals is a JSON number of its own. The API writes an amount as a double (`micros / 10^6`) and
 * reads one back with `Math.round(credits × 10^6)`; that round trip is exact only while the spacing of doubles
 * stays under a micro-credit. Below 2^33 it is 2^-20 ≈ 0.95 micro-credits, so each micro-credit amount has a
 * double within half a micro-credit of it and comes back unchanged. From 2^33 to 2^34 the spacing is 2^-19 ≈
 * 1.9 micro-credits: about half the amounts there share a double with a neighbour (8,589,934,592.000001 is
 * written as 8589934592.000002), which is why the bound is not 2^53 − 1 micro-credits (9,007,199,254 credits),
 * where the integer micro-credits are still exact but the credits the API shows are not.
 */
export const MAX_CREDITS = 2 ** 33;

/** {@link MAX_CREDITS} in micro-credits: the most a wallet holds and the most an amount of the API can be. */
export const MAX_MICROS = MAX_CREDITS * MICROS_PER_CREDIT;

/**
 * A whole number with its thousands grouped by commas (`8,589,934,592`), as `toLocaleString('en-US')` writes
 * it. Why not that: the first `toLocaleString` or `Intl` call of a process maps ~5 MiB of the node binary's ICU
 * data into memory, and the server otherwise never touches ICU (docs/scaling.md, twenty-fourth pass).
 */
export function groupThousands(whole: number): string {
  return String(Math.trunc(whole)).replace(/\B(?=(\d{3})+$)/g, ',');
}

/** What an error says a credits amount must be, so that both ways of being refused are named. */
export const CREDITS_RULE = `with at most 6 decimals and at most ${groupThousands(MAX_CREDITS)}`;

/**
 * Micro-credits to the credits number the API shows: exact up to {@link MAX_MICROS} (its JSON text has at most
 * 6 decimals and reads back as the same micro-credits); a larger amount is shown as the nearest double.
 */
export function microsToCredits(micros: number): number {
  return micros / MICROS_PER_CREDIT;
}

/**
 * Parses a credits amount from the API into micro-credits; null when it has more than 6 decimals, is not
 * finite, or is beyond {@link MAX_CREDITS} either way (a negative amount, an adjustment, is bounded alike).
 */
export function creditsToMicros(credits: number): number | null {
  if (!Number.isFinite(credits)) return null;
  const rounded = Math.round(credits * MICROS_PER_CREDIT);
  // The amount that `credits` is the number of, as microsToCredits writes it. `credits × 10^6` is itself
  // rounded (to halves from 2^51 to 2^52 micro-credits, 4,294,967,296 to 4,503,599,627 credits), so it can
  // land half a micro-credit off and Math.round on the neighbour: 4342521359.759752 gave 4342521359759753.
  const exact = [rounded, rounded - 1, rounded + 1].find((micros) => micros / MICROS_PER_CREDIT === credits);
  const micros = exact ?? rounded;
  if (!(Math.abs(micros) <= MAX_MICROS)) return null;
  // Not the number of any amount: it must still be one within rounding (0.1 + 0.2 is 0.3), not one with a
  // 7th decimal (0.1234567 is refused).
  if (
    exact === undefined &&
    Math.abs(micros / MICROS_PER_CREDIT - credits) > Number.EPSILON * Math.max(1, Math.abs(credits))
  )
    return null;
  return micros;
}
