import { CompiledQuery, type Compilable, type QueryExecutorProvider, type QueryResult } from 'kysely';

/** Something that runs a compiled query: a `Kysely` instance or a transaction. */
type Executor = QueryExecutorProvider & { executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>> };

/**
 * SQL compiled once per statement shape, run again with new parameters. Kysely builds and compiles
 * a query anew on every call, which for a 20-column INSERT costs more JavaScript than SQLite takes
 * to run it; the statements every streamed answer makes (its message row, its final update) are of
 * a fixed shape, so their SQL is kept by `shape` (a name that must determine the SQL text: the
 * same table and columns in the same order).
 *
 * `params` are the values in the order the builder binds them; the SQL is kept only after the
 * first compilation showed exactly those parameters in that order, so a wrong order costs speed,
 * never correctness; a call with an undefined value is always compiled anew.
 */
export class CompiledOnce {
  readonly #sql = new Map<string, string>();

  async run(executor: Executor, shape: string, build: () => Compilable, params: readonly unknown[]): Promise<QueryResult<unknown>> {
    // Kysely leaves out a column whose value is undefined: such a call has a SQL text of its own
    const text = params.includes(undefined) ? undefined : this.#sql.get(shape);
    if (text !== undefined) return executor.executeQuery(CompiledQuery.raw(text, [...params]));
    const compiled = build().compile();
    if (compiled.parameters.length === params.length && compiled.parameters.every((p, i) => p === params[i])) this.#sql.set(shape, compiled.sql);
    return executor.executeQuery(compiled);
  }
}
