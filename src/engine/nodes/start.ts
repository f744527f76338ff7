import type { NodeHandler } from '../types.js';

/** The entry node: its outputs are the run's validated inputs (already in the pool). */
export const startNode: NodeHandler = {
  async run(ctx) {
    const inputs = ctx.pool.toJSON()[ctx.node.id] ?? {};
    return { type: 'succeeded', inputs: { ...inputs }, outputs: { ...inputs } };
  },
};
