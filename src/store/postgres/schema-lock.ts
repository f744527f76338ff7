/**
 * PostgreSQL advisory lock held while a schema is migrated or dropped. Kysely's migrator reads the
 * catalog of every schema in the database; a schema dropped at that moment (another test server
 * closing) fails the read with "schema … does not exist". Migrations and drops take turns.
 */
export const SCHEMA_LOCK = 0x646f7665; // "dove"
