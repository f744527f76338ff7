/** Row types of Human Input forms, their deliveries and recipients (see src/store/schema.ts). */

/** A Human Input form of a paused run (one per run and node). */
export interface HumanInputFormTable {
  id: string;
  app_id: string;
  workflow_run_id: string;
  node_id: string;
  /** The end user who started the run. */
  end_user_id: string;
  /** JSON of the FormDefinition (see src/forms/form-definition.ts). */
  definition: string;
  /** waiting | submitted | timeout | expired | closed */
  status: string;
  /** Web-app token (≥128 bits), sealed (`SecretBox`; plain only in rows from before migration 016 until the form service seals them); null for email-only forms. */
  token: string | null;
  /** SHA-256 of the web-app token: the look-up key. */
  token_hash: string | null;
  /** Node-level deadline, epoch ms. */
  expiration_time: number;
  /** Global deadline, epoch ms; null when the global timeout is disabled. */
  global_deadline: number | null;
  selected_action_id: string | null;
  /** JSON of the validated submitted values. */
  submitted_data: string | null;
  submitted_at: number | null;
  submission_end_user_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface HumanInputDeliveryTable {
  id: string;
  form_id: string;
  /** webapp | email */
  type: string;
  /** JSON of the delivery method's config. */
  config: string;
  /** webapp: delivered. email: pending → delivered (every recipient sent) | failed (a recipient's last attempt failed). */
  status: string;
  /** The last sending error of an email delivery (names the recipient), else null. */
  last_error: string | null;
  created_at: number;
}

/** One email recipient of a form: a personal link (own token) and its sending state. */
export interface HumanInputFormRecipientTable {
  id: string;
  form_id: string;
  delivery_id: string;
  /** email_member | email_external */
  type: string;
  email: string;
  /** SHA-256 of the recipient's personal token (≥128 bits): the look-up key, unique over all recipients. */
  token_hash: string;
  /**
   * The token sealed (`SecretBox`) while its mail may still be sent; null once it is sent or has
   * finally failed (plain only in rows from before migration 020 until the runtime seals them).
   */
  token: string | null;
  /** pending | sent | failed */
  status: string;
  attempts: number;
  last_error: string | null;
  sent_at: number | null;
  created_at: number;
  updated_at: number;
}
