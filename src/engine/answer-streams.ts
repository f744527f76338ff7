import type { Graph } from './types.js';
import { templateSegments } from './variable-pool.js';

/** An answer node that can stream an LLM node's text live (chatflow). */
export interface AnswerStream {
  readonly answerId: string;
  /** Static text segments of the answer before the LLM reference. */
  readonly prefix: string;
  /** Segments of the answer template consumed once the stream starts (prefix + the reference). */
  readonly consumed: number;
}

/**
 * LLM nodes whose text an answer node shows next, so it can be streamed token by token: the
 * answer is the LLM's direct successor with no other incoming edge, and its template has only
 * static text before `{{#llm.text#}}`. Other answers are sent when they run, in graph order.
 */
export function answerStreams(graph: Graph): ReadonlyMap<string, AnswerStream> {
  const out = new Map<string, AnswerStream>();
  for (const node of graph.nodes.values()) {
    if (node.type !== 'llm') continue;
    for (const e of graph.outgoing.get(node.id) ?? []) {
      const target = graph.nodes.get(e.target)!;
      if (target.type !== 'answer' || (graph.incoming.get(target.id) ?? []).length !== 1) continue;
      const segs = templateSegments(String(target.data.answer ?? ''));
      const i = segs.findIndex((s) => 'selector' in s);
      if (i < 0) continue;
      const ref = segs[i] as { selector: string[] };
      if (ref.selector.length !== 2 || ref.selector[0] !== node.id || ref.selector[1] !== 'text') continue;
      out.set(node.id, { answerId: target.id, prefix: segs.slice(0, i).map((s) => ('text' in s ? s.text : '')).join(''), consumed: i + 1 });
      break;
    }
  }
  return out;
}
