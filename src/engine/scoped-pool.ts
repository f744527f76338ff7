import { VariablePool, type PoolData } from './variable-pool.js';

/**
 * One parallel iteration item's view of the run's pool. Reads and writes of the scopes in `local`
 * (the child graph's node ids and the iteration node's own `item` / `index`) stay in this item;
 * every other scope (start inputs, `sys`, `env`, `conversation`, outer nodes) is read from and
 * written to the parent pool, so an assigner's conversation-variable write inside an item reaches
 * the run. Items running at once therefore never see each other's child outputs.
 */
export class ScopedPool extends VariablePool {
  readonly #parent: VariablePool;
  readonly #local: ReadonlySet<string>;

  constructor(parent: VariablePool, local: Iterable<string>) {
    super({});
    this.#parent = parent;
    this.#local = new Set(local);
  }

  #owns(scope: unknown): boolean {
    return this.#local.has(String(scope));
  }

  override get(selector: readonly unknown[]): unknown {
    return this.#owns(selector[0]) ? super.get(selector) : this.#parent.get(selector);
  }

  override setAll(scope: string, values: Readonly<Record<string, unknown>>): void {
    if (this.#owns(scope)) super.setAll(scope, values);
    else this.#parent.setAll(scope, values);
  }

  override remove(scope: string): void {
    if (this.#owns(scope)) super.remove(scope);
    else this.#parent.remove(scope);
  }

  /** The parent's variables with this item's scopes laid over them (a copy; writes go through `setAll`). */
  override toJSON(): PoolData {
    return { ...this.#parent.toJSON(), ...super.toJSON() };
  }
}
