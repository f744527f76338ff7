/** The web API's answers the pages read (Dify's `models/share.ts` and `api/controllers/web/`). */

export interface SiteSettings {
  title: string;
  icon_type?: string | null;
  icon?: string | null;
  icon_background?: string | null;
  icon_url?: string | null;
  description?: string | null;
  copyright?: string | null;
  privacy_policy?: string | null;
  custom_disclaimer?: string | null;
  default_language?: string | null;
  show_workflow_steps?: boolean;
  use_icon_as_answer_icon?: boolean;
  chat_color_theme?: string | null;
}

export interface SiteInfo {
  app_id: string;
  end_user_id?: string;
  enable_site?: boolean;
  site: SiteSettings;
}

/** One entry of `user_input_form`: `{ "text-input": {...} }`, `{ select: {...} }`, … */
export type UserInputFormItem = Record<string, InputVariable>;

export interface InputVariable {
  label: string;
  variable: string;
  required?: boolean;
  max_length?: number;
  default?: unknown;
  options?: string[];
  hide?: boolean;
  allowed_file_types?: string[];
  allowed_file_extensions?: string[];
  allowed_file_upload_methods?: string[];
  number_limits?: number;
}

export interface FileUploadSettings {
  enabled?: boolean;
  allowed_file_types?: string[];
  allowed_file_extensions?: string[];
  allowed_file_upload_methods?: string[];
  number_limits?: number;
  image?: { enabled?: boolean; number_limits?: number; transfer_methods?: string[] };
}

export interface AppParameters {
  opening_statement?: string | null;
  suggested_questions?: string[];
  suggested_questions_after_answer?: { enabled?: boolean };
  retriever_resource?: { enabled?: boolean };
  more_like_this?: { enabled?: boolean };
  speech_to_text?: { enabled?: boolean };
  text_to_speech?: { enabled?: boolean };
  user_input_form?: UserInputFormItem[];
  file_upload?: FileUploadSettings;
  system_parameters?: Record<string, number>;
}

export interface Conversation {
  id: string;
  name: string;
  inputs?: Record<string, unknown>;
  introduction?: string;
  created_at?: number;
  updated_at?: number;
}

export interface ConversationList {
  data: Conversation[];
  has_more: boolean;
  limit: number;
}

export interface RetrieverResource {
  position?: number;
  dataset_id?: string;
  dataset_name?: string;
  document_id?: string;
  document_name?: string;
  segment_id?: string;
  score?: number;
  content?: string;
}

export interface MessageFile {
  id?: string;
  type?: string;
  url?: string;
  filename?: string;
  belongs_to?: string;
}

export interface ApiMessage {
  id: string;
  conversation_id: string;
  parent_message_id?: string | null;
  query: string;
  answer: string;
  inputs?: Record<string, unknown>;
  message_files?: MessageFile[];
  feedback?: { rating?: 'like' | 'dislike' | null } | null;
  retriever_resources?: RetrieverResource[];
  created_at?: number;
  status?: string;
  error?: string | null;
}

export interface MessageList {
  data: ApiMessage[];
  has_more: boolean;
  limit: number;
}

export interface UploadedFile {
  id: string;
  name: string;
  size: number;
  extension?: string;
  mime_type?: string;
}
