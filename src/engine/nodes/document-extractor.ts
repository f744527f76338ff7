import { NodeFailure, type GraphNode, type NodeHandler } from '../types.js';
import { selectorOf } from './shared.js';

function selectorOfNode(node: GraphNode): string[] {
  const s = selectorOf(node.data.variable_selector);
  if (!s) throw new Error('variable_selector must be a list of at least 2 names');
  return s;
}

/**
 * Dify's document extractor: the text of a file variable (`text` is a string) or of a list of
 * files (`text` is a list of strings, one per file, in order). Files are local uploads, remote URLs
 * or tool output files, read and parsed through the files port (the knowledge parsers); a type no
 * parser reads fails the node naming its extension.
 */
export const documentExtractorNode: NodeHandler = {
  validate(node) {
    selectorOfNode(node);
  },
  async run(ctx) {
    const selector = selectorOfNode(ctx.node);
    const value = ctx.pool.get(selector);
    const inputs = { variable_selector: selector };
    if (value === undefined || value === null) throw new NodeFailure(`File variable not found for selector: ${selector.join('.')}`, 'DocumentExtractorError', false);
    const files = ctx.ports.files;
    if (!files) throw new NodeFailure(`node ${ctx.node.id}: this server has no file access for document-extractor nodes`, 'DocumentExtractorError', false);
    const list = Array.isArray(value) ? value : [value];
    const documents: Record<string, unknown>[] = [];
    const texts: string[] = [];
    for (const [i, f] of list.entries()) {
      const where = Array.isArray(value) ? `${selector.join('.')}[${i}]` : selector.join('.');
      try {
        documents.push(await files.describe(f, ctx.appId));
        texts.push(await files.extractText(f, ctx.appId, ctx.signal));
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        throw new NodeFailure(`Failed to extract text from ${where}: ${(err as Error).message}`, 'DocumentExtractorError', false, { cause: err });
      }
    }
    return { type: 'succeeded', inputs, processData: { documents }, outputs: { text: Array.isArray(value) ? texts : texts[0]! } };
  },
};
