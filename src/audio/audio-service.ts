import type { Readable } from 'node:stream';
import type { App } from '../apps/app-service.js';
import { appFeatures } from '../apps/parameters.js';
import type { EndUserService } from '../apps/end-users.js';
import type { AudioConfig } from '../config.js';
import { invalidParam, notFound } from '../infra/errors.js';
import { completionRequestError } from '../llm/errors.js';
import { splitModelRef, type ModelProvider, type ModelProviders, type SpeechAudio } from '../llm/model-provider.js';
import type { MessageStore } from '../messages/message-store.js';
import { audioTooLarge, modelCurrentlyNotSupport, providerNotSupportSpeechToText, speechToTextDisabled, unsupportedAudioType } from './errors.js';
import { objectOf } from '../infra/objects.js';
import { isUuid } from '../infra/ids.js';

/** Dify's `ALLOWED_EXTENSIONS` of `AudioService`: a file is accepted when its MIME type is `audio/<one of these>`. */
export const AUDIO_EXTENSIONS = ['mp3', 'mp4', 'mpeg', 'mpga', 'm4a', 'wav', 'webm', 'amr'] as const;
const AUDIO_MIME_TYPES: readonly string[] = AUDIO_EXTENSIONS.map((e) => `audio/${e}`);

export interface AudioDeps {
  readonly config: AudioConfig;
  readonly providers: ModelProviders;
  readonly messages: MessageStore;
  readonly endUsers: EndUserService;
}

/** A received audio file, held in memory for the one upstream call (never stored). */
export interface AudioClip {
  /** The name sent upstream (its extension tells the format). */
  readonly filename: string;
  /** Lower case, without parameters. */
  readonly mimeType: string;
  readonly bytes: Buffer;
}

export interface ReceiveAudioInput {
  readonly filename: string | undefined;
  readonly mimeType: string;
  readonly body: Readable;
}

export interface SpeakInput {
  readonly messageId?: string | undefined;
  readonly text?: string | undefined;
  readonly voice?: string | undefined;
  readonly user: string;
}

/** A feature switch as `GET /parameters` reads it: a workflow's `features`, else `model_config`. */
function feature(app: App, name: 'speech_to_text' | 'text_to_speech'): Record<string, unknown> {
  return objectOf(appFeatures(app)[name]);
}

/** `audio/webm;codecs=opus` → `audio/webm` (werkzeug's `FileStorage.mimetype`). */
function bareMimeType(raw: string): string {
  return raw.split(';')[0]!.trim().toLowerCase();
}

/**
 * Dify's `AudioService`: `POST /audio-to-text` (`transcript_asr`) and `POST /text-to-audio`
 * (`transcript_tts`), with `SPEECH_TO_TEXT_MODEL` / `TEXT_TO_SPEECH_MODEL` standing in for the
 * workspace's default models. Audio passes through memory only.
 */
export class AudioService {
  readonly #d: AudioDeps;

  constructor(deps: AudioDeps) {
    this.#d = deps;
  }

  /** Dify checks the feature before it looks at the upload. */
  requireSpeechToText(app: App): void {
    if (feature(app, 'speech_to_text').enabled !== true) throw speechToTextDisabled();
  }

  /**
   * Reads an uploaded audio file: the MIME type first (no byte is read for a refused type), then
   * the bytes up to `AUDIO_TO_TEXT_FILE_SIZE_LIMIT` (the read stops at the limit).
   */
  async receive(input: ReceiveAudioInput): Promise<AudioClip> {
    const mimeType = bareMimeType(input.mimeType);
    if (!AUDIO_MIME_TYPES.includes(mimeType)) {
      input.body.resume();
      throw unsupportedAudioType(mimeType, AUDIO_MIME_TYPES);
    }
    const limit = this.#d.config.maxAudioBytes;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of input.body) {
      size += (chunk as Buffer).length;
      if (size > limit) {
        input.body.resume();
        throw audioTooLarge(limit);
      }
      chunks.push(chunk as Buffer);
    }
    const base = input.filename?.split(/[/\\]/).pop() ?? '';
    const filename = /\.[A-Za-z0-9]+$/.test(base) ? base : `audio.${mimeType.slice('audio/'.length)}`;
    return { filename, mimeType, bytes: Buffer.concat(chunks, size) };
  }

  /** The text of `clip`, from `SPEECH_TO_TEXT_MODEL`. */
  async transcribe(app: App, clip: AudioClip, user: string): Promise<string> {
    await this.#d.endUsers.getOrCreate(app.id, user);
    const { provider, model, providerName } = this.#model(this.#d.config.speechToTextModel);
    if (!provider.transcribe) throw providerNotSupportSpeechToText(providerName);
    const signal = AbortSignal.timeout(this.#d.config.timeoutSeconds * 1000);
    try {
      return await provider.transcribe({ model, filename: clip.filename, mimeType: clip.mimeType, bytes: clip.bytes, signal });
    } catch (err) {
      throw this.#timedOut(signal, err);
    }
  }

  /**
   * Speech for `text`, or for the answer of the app's message `messageId` (which wins), in the
   * request's voice, else the app's `text_to_speech.voice`, else `TEXT_TO_SPEECH_DEFAULT_VOICE`.
   * Resolves once the upstream answered; the audio then streams from `body`.
   */
  async speak(app: App, input: SpeakInput): Promise<SpeechAudio> {
    const d = this.#d;
    const tts = feature(app, 'text_to_speech');
    if (tts.enabled !== true) throw invalidParam('TTS is not enabled');
    await d.endUsers.getOrCreate(app.id, input.user);
    let text: string;
    if (input.messageId !== undefined && input.messageId !== '') {
      const message = isUuid(input.messageId) ? await d.messages.find(input.messageId) : undefined;
      if (!message || message.appId !== app.id) throw notFound('Message Not Exists.');
      if (message.answer.trim() === '') throw invalidParam('The message has no answer to speak.');
      text = message.answer.trim();
    } else {
      text = (input.text ?? '').trim();
      if (text === '') throw invalidParam('Text is required');
    }
    if (text.length > d.config.maxTextChars) {
      throw invalidParam(`Text is too long: ${text.length} characters, at most ${d.config.maxTextChars} (TEXT_TO_SPEECH_MAX_CHARS).`);
    }
    const appVoice = typeof tts.voice === 'string' ? tts.voice.trim() : '';
    const voice = input.voice?.trim() || appVoice || d.config.defaultVoice;
    const { provider, model, providerName } = this.#model(d.config.textToSpeechModel);
    if (!provider.speak) {
      throw modelCurrentlyNotSupport(`Provider "${providerName}" (TEXT_TO_SPEECH_MODEL) does not support text to speech.`);
    }
    const signal = AbortSignal.timeout(d.config.timeoutSeconds * 1000);
    try {
      return await provider.speak({ model, text, voice, signal });
    } catch (err) {
      throw this.#timedOut(signal, err);
    }
  }

  /** A call cut by `AUDIO_REQUEST_TIMEOUT` is a `completion_request_error` naming it; other errors pass. */
  #timedOut(signal: AbortSignal, err: unknown): unknown {
    if (!signal.aborted) return err;
    return completionRequestError(`The audio model did not answer within ${this.#d.config.timeoutSeconds} s (AUDIO_REQUEST_TIMEOUT).`);
  }

  /** The configured `provider/model`; a provider without credentials is `provider_not_initialize`. */
  #model(ref: string): { provider: ModelProvider; model: string; providerName: string } {
    const m = splitModelRef(ref)!; // checked at boot
    return { provider: this.#d.providers.get(m.provider), model: m.model, providerName: m.provider };
  }
}
