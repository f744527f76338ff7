/** DSL YAML for text-generator test apps. */
export interface CompletionAppOptions {
  readonly provider?: string;
  readonly model?: string;
  /** `chat` (default) or `completion` (legacy endpoint). */
  readonly mode?: 'chat' | 'completion';
  readonly prePrompt?: string;
  readonly imageUpload?: boolean;
  readonly name?: string;
}

/** A completion app with text-input, paragraph, select, number and file variables. */
export function completionApp(o: CompletionAppOptions = {}): string {
  return `app:
  mode: completion
  name: ${o.name ?? 'Test writer'}
kind: app
version: 0.3.1
model_config:
  model:
    provider: ${o.provider ?? 'langgenius/openai/openai'}
    name: ${o.model ?? 'gpt-4o-mini'}
    mode: ${o.mode ?? 'chat'}
    completion_params:
      temperature: 0.2
      max_tokens: 512
  pre_prompt: ${JSON.stringify(o.prePrompt ?? 'Write about {{topic}} in a {{tone}} tone, {{count}} lines. {{notes}}')}
  user_input_form:
    - text-input:
        label: Topic
        variable: topic
        required: true
        max_length: 20
    - select:
        label: Tone
        variable: tone
        required: false
        default: friendly
        options: [friendly, formal]
    - number:
        label: Count
        variable: count
        required: false
    - paragraph:
        label: Notes
        variable: notes
        required: false
    - file:
        label: Picture
        variable: picture
        required: false
        allowed_file_types: [image]
        allowed_file_upload_methods: [local_file, remote_url]
  file_upload:
    image:
      enabled: ${o.imageUpload ?? true}
      number_limits: 3
      detail: high
      transfer_methods: [remote_url, local_file]
`;
}

/** A chat app of the mock echo model that takes uploaded images (local files). */
export const imageChatApp = (name: string) => `app:
  mode: chat
  name: ${name}
kind: app
version: 0.3.1
model_config:
  model:
    provider: mock
    name: mock-echo
    mode: chat
  pre_prompt: ''
  file_upload:
    image:
      enabled: true
      number_limits: 3
      detail: high
      transfer_methods: [local_file]
`;

/** A chat app (for wrong-mode checks). */
export const CHAT_APP = `app:
  mode: chat
  name: Chatty
kind: app
version: 0.3.1
model_config:
  model:
    provider: mock
    name: mock-echo
    mode: chat
  pre_prompt: ''
`;

/** A chat app on OpenAI's `gpt-4o-mini` (the tests point OPENAI_BASE_URL at their fake server). */
export const openAiChatApp = (name: string) => `app:
  mode: chat
  name: ${name}
kind: app
version: 0.3.1
model_config:
  model:
    provider: langgenius/openai/openai
    name: gpt-4o-mini
    mode: chat
  pre_prompt: 'You are helpful.'
`;
