/**
 * Reasoning ("thinking") tokens as Dify's model plugins hand them on: inside the text stream,
 * opened by `<think>\n` before the first reasoning token and closed by `\n</think>` before the
 * first answer token after it (or at the end). The `llm` node's `reasoning_format` then keeps
 * them (`tagged`) or moves them to `reasoning_content` (`separated`).
 */
export class ThinkWrap {
  #open = false;

  /** The text to emit for a piece of reasoning and/or answer that arrived together. */
  next(reasoning: string | undefined, answer: string | undefined): string {
    let out = '';
    if (reasoning) {
      out += this.#open ? reasoning : `<think>\n${reasoning}`;
      this.#open = true;
    }
    if (answer) {
      if (this.#open) out += '\n</think>';
      this.#open = false;
      out += answer;
    }
    return out;
  }

  /** What closes a think block the stream left open (`''` when none is). */
  end(): string {
    if (!this.#open) return '';
    this.#open = false;
    return '\n</think>';
  }
}
