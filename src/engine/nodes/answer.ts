import type { NodeHandler } from '../types.js';
import { templateSegments, toText } from '../variable-pool.js';

/** Chatflow answer: renders its template and streams it as `message` events, in segment order. */
export const answerNode: NodeHandler = {
  validate(node) {
    if (typeof node.data.answer !== 'string') throw new Error('answer must be a string');
  },
  async run(ctx) {
    let answer = '';
    for (const seg of templateSegments(String(ctx.node.data.answer))) {
      const text = 'text' in seg ? seg.text : toText(ctx.pool.get(seg.selector));
      if (text === '') continue;
      answer += text;
      ctx.emit({ type: 'answer', text });
    }
    return { type: 'succeeded', outputs: { answer, files: [] } };
  },
};
