/** What a moderation check says about a text (Dify's `ModerationOutputsResult`). */
export interface OutputVerdict {
  readonly flagged: boolean;
  readonly action: 'direct_output' | 'overridden';
  readonly presetResponse: string;
  /** `overridden`: the text to show instead. */
  readonly text: string;
}

/** Dify's `MessageReplaceReason.OUTPUT_MODERATION`, the `reason` of a replacement made while the answer streams. */
export const OUTPUT_MODERATION_REASON = 'output_moderation';

/**
 * Dify's OutputModeration for one answer as it streams: each time `bufferSize` more characters have
 * arrived (and no check is under way) the text so far is checked. A `direct_output` verdict replaces
 * the answer with the preset response (`onReplace`) and ends the streaming (`append` answers false);
 * `overridden` replaces the text checked and streaming goes on. `finish` checks the whole answer
 * once more and gives the answer to store. A check that fails is the caller's to log: it answers
 * undefined and nothing is replaced (as Dify).
 */
export class OutputModeration {
  readonly #check: (text: string) => Promise<OutputVerdict | undefined>;
  readonly #bufferSize: number;
  readonly #onReplace: (answer: string, reason: string) => void;
  #buffer = '';
  #checkedLength = 0;
  #inFlight: Promise<void> | undefined;
  #final: string | undefined;
  #finished = false;
  #onStop: (() => void) | undefined;
  #onIdle: (() => void) | undefined;

  constructor(check: (text: string) => Promise<OutputVerdict | undefined>, bufferSize: number, onReplace: (answer: string, reason: string) => void) {
    this.#check = check;
    this.#bufferSize = bufferSize;
    this.#onReplace = onReplace;
  }

  /** True once a `direct_output` verdict replaced the answer: nothing more is streamed. */
  get replaced(): boolean {
    return this.#final !== undefined;
  }

  /** `fn` runs once a `direct_output` verdict has replaced the answer: the generation should stop. */
  whenReplaced(fn: () => void): void {
    if (this.#final !== undefined) fn();
    else this.#onStop = fn;
  }

  /** True while a check is under way (a caller that holds text back until it is checked waits for `whenIdle`). */
  get checking(): boolean {
    return this.#inFlight !== undefined;
  }

  /** `fn` runs each time the checks end with none under way and the answer not replaced. */
  whenIdle(fn: () => void): void {
    this.#onIdle = fn;
  }

  /** Resolves once no check is under way. */
  async settled(): Promise<void> {
    while (this.#inFlight) await this.#inFlight;
  }

  /** Adds streamed text; false when the answer has been replaced (the text must not be sent). */
  append(text: string): boolean {
    if (this.#final !== undefined) return false;
    this.#buffer += text;
    this.#maybeCheck();
    return true;
  }

  #maybeCheck(): void {
    if (this.#inFlight || this.#finished || this.#final !== undefined) return;
    if (this.#buffer.length - this.#checkedLength < this.#bufferSize) return;
    const checked = this.#buffer;
    this.#checkedLength = checked.length;
    this.#inFlight = this.#check(checked).then((v) => {
      this.#inFlight = undefined;
      if (v?.flagged && !this.#finished) {
        if (v.action === 'direct_output') {
          this.#final = v.presetResponse;
          this.#onReplace(v.presetResponse, OUTPUT_MODERATION_REASON);
          this.#onStop?.();
          return;
        }
        this.#onReplace(v.text + this.#buffer.slice(checked.length), OUTPUT_MODERATION_REASON);
      }
      this.#maybeCheck();
      if (!this.#inFlight) this.#onIdle?.();
    });
  }

  /**
   * The answer to store: the preset response if the stream was replaced, else `answer` checked whole
   * (Dify's `moderation_completion`): the preset response or the overriding text when flagged.
   * `flagged`: this last check changed it (the caller sends it as a replacement then, as Dify).
   */
  async finish(answer: string): Promise<{ readonly answer: string; readonly flagged: boolean }> {
    this.#finished = true;
    while (this.#inFlight) await this.#inFlight;
    if (this.#final !== undefined) return { answer: this.#final, flagged: false };
    const v = await this.#check(answer);
    if (!v?.flagged) return { answer, flagged: false };
    return { answer: v.action === 'direct_output' ? v.presetResponse : v.text, flagged: true };
  }
}
