/** The part of the Web Storage API the SDK uses; `localStorage`, `sessionStorage` or {@link memoryStorage}. */
export interface TollgateStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** A storage kept in memory (Node, tests, or apps that do not want tokens to outlive the page). */
export function memoryStorage(): TollgateStorage {
  const items = new Map<string, string>();
  return {
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, value),
    removeItem: (key) => void items.delete(key),
  };
}

/**
 * `globalThis[name]` when this is a page with a usable Web Storage (private modes can throw); null elsewhere.
 * Outside a page (Node, workers) the tokens stay in memory: Node 25 and later define a `localStorage` whose mere
 * read prints an ExperimentalWarning unless the process was started with --localstorage-file.
 */
export function browserStorage(name: 'localStorage' | 'sessionStorage'): TollgateStorage | null {
  if (typeof (globalThis as { document?: unknown }).document === 'undefined') return null;
  try {
    const storage = (globalThis as Record<string, unknown>)[name] as TollgateStorage | undefined;
    if (!storage) return null;
    storage.getItem('tollgate:probe');
    return storage;
  } catch {
    return null;
  }
}
