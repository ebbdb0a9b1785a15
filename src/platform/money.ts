/**
 * Credits in the API are JSON numbers with at most 6 decimals; storage and arithmetic use integer
 * micro-credits (1 credit = 1,000,000). No floating point touches the ledger: conversion happens only at
 * the edge, here.
 */
export const MICROS_PER_CREDIT = 1_000_000;

/** The most credits an amount can be: 2^53 − 1 micro-credits, the last integer a JSON number holds exactly. */
export const MAX_CREDITS = Math.floor(Number.MAX_SAFE_INTEGER / MICROS_PER_CREDIT);

/**
 * A whole number with its thousands grouped by commas (`9,007,199,254`), as `toLocaleString('en-US')` writes
 * it. Why not that: the first `toLocaleString` or `Intl` call of a process maps ~5 MiB of the node binary's ICU
 * data into memory, and the server otherwise never touches ICU (docs/scaling.md, twenty-fourth pass).
 */
export function groupThousands(whole: number): string {
  return String(Math.trunc(whole)).replace(/\B(?=(\d{3})+$)/g, ',');
}

/** What an error says a credits amount must be, so that both ways of being refused are named. */
export const CREDITS_RULE = `with at most 6 decimals and at most ${groupThousands(MAX_CREDITS)}`;

/** Micro-credits to the credits number the API shows (exact: every integer micro amount has a shortest decimal form with ≤ 6 decimals). */
export function microsToCredits(micros: number): number {
  return micros / MICROS_PER_CREDIT;
}

/**
 * Parses a credits amount from the API into micro-credits; null when it has more than 6 decimals, is not
 * finite, or is beyond 2^53 micro-credits.
 */
export function creditsToMicros(credits: number): number | null {
  if (!Number.isFinite(credits)) return null;
  const micros = Math.round(credits * MICROS_PER_CREDIT);
  if (!Number.isSafeInteger(micros)) return null;
  // The decimal text must round-trip: 0.1234567 has a 7th decimal and is refused.
  if (Math.abs(micros / MICROS_PER_CREDIT - credits) > Number.EPSILON * Math.max(1, Math.abs(credits))) return null;
  return micros;
}
