import type { Kysely } from 'kysely';
import { sha256 } from '../../infra/ids.js';

interface OldRecipient {
  id: string;
  form_id: string;
  delivery_id: string;
  type: string;
  email: string;
  token: string | null;
  token_hash: string;
  status: string;
  attempts: number;
  last_error: string | null;
  sent_at: number | null;
  created_at: number;
  updated_at: number;
}

const BATCH = 500;

/**
 * Email recipients' personal tokens are looked up by their SHA-256 (`token_hash`), as web-app
 * form tokens are (016). The raw token is only needed until its mail is sent: `token` becomes
 * nullable and holds a sealed copy (SecretBox) while the mail is pending, null after. Existing rows
 * get their hash here; the plain tokens of pending ones are sealed by the runtime at start (sealing
 * needs the server key, which migrations do not have), those already sent or failed are dropped.
 *
 * SQLite cannot drop NOT NULL or a UNIQUE column in place, so the table is rebuilt (both engines
 * alike): a new table, rows copied in batches, the old one dropped, the new one renamed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const t = db as unknown as Kysely<{ human_input_form_recipients: OldRecipient; human_input_form_recipients_020: OldRecipient }>;
  await db.schema
    .createTable('human_input_form_recipients_020')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('form_id', 'text', (c) => c.notNull())
    .addColumn('delivery_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull())
    .addColumn('token', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('last_error', 'text')
    .addColumn('sent_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  let after = '';
  for (;;) {
    const rows = await t
      .selectFrom('human_input_form_recipients')
      .select(['id', 'form_id', 'delivery_id', 'type', 'email', 'token', 'status', 'attempts', 'last_error', 'sent_at', 'created_at', 'updated_at'])
      .where('id', '>', after)
      .orderBy('id')
      .limit(BATCH)
      .execute();
    if (rows.length === 0) break;
    await t
      .insertInto('human_input_form_recipients_020')
      .values(rows.map((r) => ({ ...r, token_hash: sha256(r.token!), token: r.status === 'pending' ? r.token : null })))
      .execute();
    after = rows.at(-1)!.id;
  }
  await db.schema.dropTable('human_input_form_recipients').execute();
  await db.schema.alterTable('human_input_form_recipients_020').renameTo('human_input_form_recipients').execute();
  await db.schema.createIndex('human_input_form_recipients_token_hash').unique().on('human_input_form_recipients').column('token_hash').execute();
  await db.schema.createIndex('human_input_form_recipients_form').on('human_input_form_recipients').column('form_id').execute();
  await db.schema.createIndex('human_input_form_recipients_delivery').on('human_input_form_recipients').column('delivery_id').execute();
}
