import type { Generated } from 'kysely';

/** Row types of the workspace, apps, their versions and keys, end users, accounts and server secrets (see src/store/schema.ts). */

export interface WorkspaceTable {
  id: string;
  name: string;
  created_at: number;
}

export interface AppTable {
  id: string;
  workspace_id: string;
  name: string;
  /** completion | chat | advanced-chat | workflow */
  mode: string;
  description: string;
  icon: string;
  /** Parsed DSL document as JSON text. */
  dsl: string;
  enable_api: number;
  status: string;
  /** Per-app concurrent request limit; null = the instance default. */
  max_active_requests: number | null;
  created_at: number;
  updated_at: number;
  /** The graph version `dsl` is (1 at import; `app update` adds one). */
  version: number;
}

/** Every version of an app's DSL; runs resume on the version they started with. */
export interface AppVersionTable {
  app_id: string;
  version: number;
  /** Parsed DSL document as JSON text. */
  dsl: string;
  created_at: number;
}

export interface ApiKeyTable {
  id: string;
  /** app | dataset */
  type: string;
  app_id: string | null;
  workspace_id: string;
  /** SHA-256 hex of the whole key; the key itself is never stored. */
  token_hash: string;
  /** First characters of the key, for `key list`. */
  hint: string;
  created_at: number;
  last_used_at: number | null;
}

export interface EndUserTable {
  id: string;
  app_id: string;
  /** The caller's `user` string. */
  session_id: string;
  created_at: number;
}

/** Console/CLI identities that leave admin feedback. */
export interface AccountTable {
  id: string;
  name: string;
  /** Where Human Input mail to this member goes (`dovetail account create --email`); null when unset. */
  email: string | null;
  created_at: number;
  /** `scrypt$N$r$p$salt$hash` (base64url salt and hash); null: cannot log in to the console until `account set-password`. */
  password_hash: Generated<string | null>;
  /** owner | admin | editor | viewer (Dify's roles); an account made by feedback has the table's default. */
  role: Generated<string>;
  /** '' for an account made by feedback before any console account (set when it gets a password). */
  workspace_id: Generated<string>;
}

/** A console log-in (`dovetail_console_session` cookie), found by the SHA-256 hex of its token. */
export interface ConsoleSessionTable {
  token_hash: string;
  account_id: string;
  /** The `X-CSRF-Token` every state-changing request of this session must carry. */
  csrf_token: string;
  created_at: number;
  expires_at: number;
}

export interface ServerSecretTable {
  name: string;
  value: string;
  created_at: number;
}

/** An app's web app (Dify's `sites`): one row per app, found by its public code. */
export interface SiteTable {
  app_id: string;
  /** 16 letters and digits, unique: the share link's `/chat/{code}` and the passport's `X-App-Code`. */
  code: string;
  /** 1: the web app answers (Dify's default); 0: no passport, and tokens answer "Site is disabled.". */
  enabled: number;
  /** The site's settings (title, icon, copyright, …) as JSON text (see src/apps/site-settings.ts). */
  settings: string;
  created_at: number;
  updated_at: number;
}
