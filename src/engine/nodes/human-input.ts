import { TIMEOUT_HANDLE } from '../../lib/human-input-handles.js';
import { NodeFailure, type NodeHandler } from '../types.js';
import { isObject } from './shared.js';

/**
 * Asks the Human Input gateway for a decision each time it runs: `pause` (no submission yet),
 * `completed` (follow the chosen action's handle) or `timeout` (follow `__timeout`).
 */
export const humanInputNode: NodeHandler = {
  branch: true,
  validate(node) {
    const actions = node.data.user_actions;
    if (actions !== undefined && !Array.isArray(actions)) throw new Error('user_actions must be a list');
    const ids = new Set<string>();
    for (const [i, a] of (actions ?? []).entries()) {
      if (!isObject(a) || typeof a.id !== 'string') throw new Error(`user_actions[${i}].id must be a string`);
      if (ids.has(a.id)) throw new Error(`user_actions[${i}].id "${a.id}" is not unique`);
      ids.add(a.id);
    }
  },
  async run(ctx) {
    const gateway = ctx.ports.humanInput;
    if (!gateway) throw new NodeFailure('Human Input forms are not available on this server (no gateway configured)', 'HumanInputUnavailable', false);
    const decision = await gateway.decide({
      runId: ctx.runId,
      appId: ctx.appId,
      endUserId: ctx.endUserId,
      nodeId: ctx.node.id,
      nodeTitle: ctx.node.title,
      data: ctx.node.data,
      resolve: (selector) => ctx.pool.get(selector),
      render: (template) => ctx.pool.render(template),
      now: ctx.ports.now(),
    });
    switch (decision.type) {
      case 'pause':
        return { type: 'pause', required: decision.required };
      case 'completed':
        ctx.emit({ type: 'human_input_form_filled', data: decision.filled });
        return { type: 'succeeded', inputs: { ...decision.inputs }, outputs: { ...decision.outputs }, handle: decision.handle };
      case 'timeout':
        ctx.emit({ type: 'human_input_form_timeout', data: decision.timeout });
        return { type: 'succeeded', inputs: {}, outputs: { ...decision.outputs }, handle: TIMEOUT_HANDLE };
    }
  },
};
