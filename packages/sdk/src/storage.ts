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

/** `globalThis[name]` when this environment has a usable Web Storage there (private modes can throw). */
export function browserStorage(name: 'localStorage' | 'sessionStorage'): TollgateStorage | null {
  try {
    const storage = (globalThis as Record<string, unknown>)[name] as TollgateStorage | undefined;
    if (!storage) return null;
    storage.getItem('tollgate:probe');
    return storage;
  } catch {
    return null;
  }
}
