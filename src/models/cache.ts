import type { AppContext } from '../platform/context.ts';
import { listAllModels, type CatalogueModel } from './catalogue.ts';

/** The bus channel on which a catalogue change is announced, so every process drops its copy. */
export const MODELS_CHANGED = 'models:changed';

/** How long a process trusts its copy of the catalogue without hearing of a change. */
const MODEL_CACHE_TTL_MS = 30_000;

/**
 * The whole catalogue kept in process: the hot path resolves a model id with no database round trip. A
 * change made here or in another process (through the bus) drops the copy at once; the TTL bounds how stale
 * it can be if a message is lost.
 */
export class ModelCache {
  #ctx: AppContext;
  #models: Map<string, CatalogueModel> | null = null;
  #loadedAt = 0;
  #loading: Promise<Map<string, CatalogueModel>> | null = null;
  #generation = 0;

  constructor(ctx: AppContext) {
    this.#ctx = ctx;
    ctx.bus.subscribe(MODELS_CHANGED, () => this.invalidate());
  }

  /** The enabled model with this id, or null. */
  async get(id: string): Promise<CatalogueModel | null> {
    const model = (await this.#all()).get(id);
    return model?.enabled ? model : null;
  }

  /** Every enabled model, sorted by id. */
  async list(): Promise<CatalogueModel[]> {
    return [...(await this.#all()).values()].filter((m) => m.enabled);
  }

  /** Drops this process's copy (the next read reloads). */
  invalidate(): void {
    this.#generation++;
    this.#models = null;
    this.#loading = null;
  }

  /** Drops every process's copy: call after writing the catalogue. */
  announceChange(): void {
    this.invalidate();
    this.#ctx.bus.publish(MODELS_CHANGED, String(this.#ctx.clock.now()));
  }

  async #all(): Promise<Map<string, CatalogueModel>> {
    if (this.#models && Date.now() - this.#loadedAt < MODEL_CACHE_TTL_MS) return this.#models;
    if (!this.#loading) {
      const generation = this.#generation;
      // Concurrent misses share one query; a change during the load is not overwritten by the stale result.
      this.#loading = listAllModels(this.#ctx.db).then(
        (models) => {
          const map = new Map(models.map((m) => [m.id, m]));
          if (generation === this.#generation) {
            this.#models = map;
            this.#loadedAt = Date.now();
            this.#loading = null;
          }
          return map;
        },
        (error) => {
          this.#loading = null;
          throw error;
        },
      );
    }
    return this.#loading;
  }
}
