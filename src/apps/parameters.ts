import type { UploadLimits } from '../config.js';
import type { App } from './app-service.js';
import { toUserInputForm } from './input-form.js';
import { objectOf } from '../infra/objects.js';

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

/** `GET /v1/info`. */
/**
 * `GET /v1/site`: the web-app settings Dify keeps per app, from the DSL's `app` block where it has
 * them (title, icon, description, `use_icon_as_answer_icon`) and Dify's defaults otherwise.
 */
export function appSite(app: App): Record<string, unknown> {
  const a = app.dsl.app;
  const str = (v: unknown, d: string) => (typeof v === 'string' ? v : d);
  return {
    title: app.name,
    chat_color_theme: '',
    chat_color_theme_inverted: false,
    icon_type: str(a.icon_type, 'emoji'),
    icon: str(a.icon, '🤖'),
    icon_background: str(a.icon_background, '#FFEAD5'),
    icon_url: null,
    description: app.description,
    copyright: '',
    privacy_policy: '',
    input_placeholder: null,
    custom_disclaimer: '',
    default_language: 'en-US',
    show_workflow_steps: true,
    use_icon_as_answer_icon: a.use_icon_as_answer_icon === true,
  };
}

export function appInfo(app: App): Record<string, unknown> {
  return { name: app.name, description: app.description, tags: [], mode: app.mode, author_name: 'Dovetail' };
}
