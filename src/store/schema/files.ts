/** Row types of uploaded files (see src/store/schema.ts). */

export interface UploadFileTable {
  id: string;
  workspace_id: string;
  app_id: string | null;
  name: string;
  size: number;
  extension: string;
  mime_type: string;
  blob_key: string;
  /** End-user id (or account name for CLI/dataset uploads). */
  created_by: string;
  /** end_user | account */
  created_by_role: string;
  created_at: number;
}
