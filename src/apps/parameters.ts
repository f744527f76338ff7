import type { UploadLimits } from '../config.js';
import type { App } from './app-service.js';
import { toUserInputForm } from './input-form.js';
import { objectOf } from '../infra/objects.js';
import type { SiteSettings } from './site-settings.js';

const MB = 1024 * 1024;

function enabled(v: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const o = objectOf(v);
  return { ...extra, ...o, enabled: o.enabled === true };
}

/** An app's feature settings: a workflow's `features`, else (completion/chat) its `model_config`. */
export function appFeatures(app: App): Record<string, unknown> {
  return app.dsl.workflow ? objectOf(app.dsl.workflow.features) : objectOf(app.dsl.model_config);
}

/** `GET /v1/parameters`, from the app's features. */
export function appParameters(app: App, limits: UploadLimits): Record<string, unknown> {
  const f = appFeatures(app);
  const upload = objectOf(f.file_upload);
  return {
    opening_statement: typeof f.opening_statement === 'string' ? f.opening_statement : '',
    suggested_questions: Array.isArray(f.suggested_questions) ? f.suggested_questions : [],
    suggested_questions_after_answer: enabled(f.suggested_questions_after_answer),
    speech_to_text: enabled(f.speech_to_text),
    text_to_speech: enabled(f.text_to_speech, { voice: '', language: '' }),
    retriever_resource: enabled(f.retriever_resource),
    annotation_reply: enabled(f.annotation_reply),
    more_like_this: enabled(f.more_like_this),
    sensitive_word_avoidance: enabled(f.sensitive_word_avoidance),
    user_input_form: toUserInputForm(app.inputs),
    file_upload: Object.keys(upload).length > 0 ? upload : { image: { enabled: false, number_limits: 3, detail: 'high', transfer_methods: ['remote_url', 'local_file'] } },
    system_parameters: {
      file_size_limit: limits.fileBytes / MB,
      image_file_size_limit: limits.imageBytes / MB,
      audio_file_size_limit: limits.audioBytes / MB,
      video_file_size_limit: limits.videoBytes / MB,
      workflow_file_upload_limit: limits.workflowFileUploadLimit,
    },
  };
}

/**
 * `GET /v1/site`: the app's web-app settings (its site's, see src/apps/site-settings.ts) in Dify's
 * order; the web app's `GET /api/site` nests the same with `prompt_public`.
 */
export function appSite(s: SiteSettings, opts: { web?: boolean } = {}): Record<string, unknown> {
  return {
    title: s.title,
    chat_color_theme: s.chat_color_theme,
    chat_color_theme_inverted: s.chat_color_theme_inverted,
    icon_type: s.icon_type,
    icon: s.icon,
    icon_background: s.icon_background,
    icon_url: s.icon_url,
    description: s.description,
    copyright: s.copyright,
    privacy_policy: s.privacy_policy,
    input_placeholder: s.input_placeholder,
    custom_disclaimer: s.custom_disclaimer,
    default_language: s.default_language,
    ...(opts.web ? { prompt_public: s.prompt_public } : {}),
    show_workflow_steps: s.show_workflow_steps,
    use_icon_as_answer_icon: s.use_icon_as_answer_icon,
  };
}

/** `GET /v1/info`. */
export function appInfo(app: App): Record<string, unknown> {
  return { name: app.name, description: app.description, tags: [], mode: app.mode, author_name: 'Dovetail' };
}
