import { sql, type RawBuilder } from 'kysely';

/**
 * `column` contains `keyword`, case-insensitively, with the keyword's `%`, `_` and `\` taken
 * literally. The same SQL on SQLite (whose LIKE has no escape character unless one is named) and
 * PostgreSQL.
 */
export function containsIgnoringCase(column: string, keyword: string): RawBuilder<boolean> {
  const pattern = `%${keyword.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  return sql<boolean>`lower(${sql.ref(column)}) LIKE ${pattern} ESCAPE '\\'`;
}
