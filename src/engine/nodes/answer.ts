import type { NodeHandler } from '../types.js';
import { templateSegments, toText } from '../variable-pool.js';

/** Chatflow answer: renders its template and sends it as `message` events, in segment order. */
export const answerNode: NodeHandler = {
  validate(node) {
    if (typeof node.data.answer !== 'string') throw new Error('answer must be a string');
  },
  async run(ctx) {
    let answer = '';
    templateSegments(String(ctx.node.data.answer)).forEach((seg, i) => {
      const text = 'text' in seg ? seg.text : toText(ctx.pool.get(seg.selector));
      answer += text;
      // segments an LLM node already streamed live are not sent twice
      if (text !== '' && i >= ctx.streamedSegments) ctx.emit({ type: 'answer', text });
    });
    return { type: 'succeeded', outputs: { answer, files: [] } };
  },
};
