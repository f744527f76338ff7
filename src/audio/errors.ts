import { defineError } from '../infra/errors.js';

/** 400 `speech_to_text_disabled`: the app's `speech_to_text` feature is off. */
export const speechToTextDisabled = defineError('speech_to_text_disabled', 400, () => 'Speech to text is disabled.');
/** 400 `no_audio_uploaded`: the form has no `file` part. */
export const noAudioUploaded = defineError('no_audio_uploaded', 400, () => 'Please upload your audio.');
/** 413 `audio_too_large`, naming the limit and its setting. */
export const audioTooLarge = defineError(
  'audio_too_large',
  413,
  (limitBytes: number) => `Audio size larger than ${limitBytes / (1024 * 1024)} mb (AUDIO_TO_TEXT_FILE_SIZE_LIMIT).`,
);
/** 415 `unsupported_audio_type`: the `file` part's MIME type is not one Dify accepts. */
export const unsupportedAudioType = defineError(
  'unsupported_audio_type',
  415,
  (got: string, allowed: readonly string[]) => `Audio type not allowed. Got "${got}"; allowed: ${allowed.join(', ')}.`,
);
/** 400 `provider_not_support_speech_to_text`: `SPEECH_TO_TEXT_MODEL`'s provider cannot transcribe. */
export const providerNotSupportSpeechToText = defineError(
  'provider_not_support_speech_to_text',
  400,
  (provider: string) => `Provider not support speech to text. Provider "${provider}" (SPEECH_TO_TEXT_MODEL) cannot transcribe audio.`,
);
/** 400 `model_currently_not_support`: `TEXT_TO_SPEECH_MODEL`'s provider cannot speak. */
export const modelCurrentlyNotSupport = defineError('model_currently_not_support', 400, (detail: string) => detail);
