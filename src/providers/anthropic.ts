/** The Anthropic provider lives in `anthropic/`; this path stays for the tests and modules that import it. */
export * from './anthropic/index.ts';
