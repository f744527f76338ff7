import type { Kysely } from 'kysely';
import { sha256 } from '../../infra/ids.js';

/**
 * Form tokens are looked up by their SHA-256 (`token_hash`), as API keys are. Existing rows get
 * their hash here; the plain `token` they still hold is sealed by the form service at start
 * (sealing needs the server key, which migrations do not have), after which `token` only ever
 * holds a sealed value, kept to show the token again when a paused run re-emits its form.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('human_input_forms').addColumn('token_hash', 'text').execute();
  const forms = db as unknown as Kysely<{ human_input_forms: { id: string; token: string | null; token_hash: string | null } }>;
  let after = '';
  for (;;) {
    const rows = await forms.selectFrom('human_input_forms').select(['id', 'token']).where('token', 'is not', null).where('id', '>', after).orderBy('id').limit(500).execute();
    if (rows.length === 0) break;
    for (const r of rows) await forms.updateTable('human_input_forms').set({ token_hash: sha256(r.token!) }).where('id', '=', r.id).execute();
    after = rows.at(-1)!.id;
  }
  await db.schema.createIndex('human_input_forms_token_hash').unique().on('human_input_forms').column('token_hash').execute();
}
