import type { NodeHandler } from '../types.js';
import { variableList } from './shared.js';

/** Collects the run's outputs; sources that did not run give null. */
export const endNode: NodeHandler = {
  validate(node) {
    variableList(node.data.outputs, 'outputs');
  },
  async run(ctx) {
    const outputs: Record<string, unknown> = {};
    for (const o of variableList(ctx.node.data.outputs, 'outputs')) outputs[o.variable] = ctx.pool.get(o.selector) ?? null;
    return { type: 'succeeded', inputs: { ...outputs }, outputs };
  },
};
