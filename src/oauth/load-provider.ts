import { readFileSync } from 'node:fs';

/**
 * oidc-provider's module, loaded once, on the first OAuth request (it and its dependencies take tens of MB).
 *
 * Why this is not a bare `import('oidc-provider')`: when oidc-provider's module is evaluated it prints
 * "oidc-provider WARNING: Unsupported runtime" unless `process.release.lts` names an LTS line from Node 22 on.
 * That field is set only on LTS builds, so the warning fires on every Current release, the Node 26 this
 * project pins in package.json (`dependencies.node`) included; oidc-provider has no `engines` range that
 * would tell npm, nor an option. The warning is a support policy, not a known incompatibility: the OAuth
 * and OpenID Connect suites (openid-client among them) run on the pinned Node. So on exactly that Node the
 * one line is not printed, as no user can act on it; on any other runtime (another Node, Bun, Deno) it is.
 */
let loaded: Promise<typeof import('oidc-provider')> | undefined;

/** The major version of the `node` package the project pins, or null when it cannot be read. */
export function pinnedNodeMajor(): number | null {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    const major = /^\D*(\d+)/.exec(pkg.dependencies?.node ?? '')?.[1];
    return major ? Number(major) : null;
  } catch {
    return null;
  }
}

/** True when oidc-provider's runtime warning is only about running on the Node the project pins. */
export function onPinnedRuntime(versions: NodeJS.ProcessVersions = process.versions): boolean {
  const bun = 'bun' in versions;
  const deno = 'deno' in versions;
  return !bun && !deno && Number(versions.node.split('.')[0]) === pinnedNodeMajor();
}

/** Imports oidc-provider (once), without its "Unsupported runtime" line on the pinned Node (see above). */
export function loadOidcProvider(): Promise<typeof import('oidc-provider')> {
  loaded ??= (async () => {
    if (!onPinnedRuntime()) return import('oidc-provider');
    const warn = console.warn;
    // Only while the module is evaluated, and only that one message; every other line passes.
    console.warn = (...args: unknown[]) => {
      if (typeof args[0] === 'string' && args[0].includes('oidc-provider WARNING: Unsupported runtime')) return;
      warn.apply(console, args);
    };
    try {
      return await import('oidc-provider');
    } finally {
      console.warn = warn;
    }
  })();
  return loaded;
}
