import type { NodeHandler } from '../types.js';

/** `loop-start` / `iteration-start`: the entry of a container's child graph; does nothing itself. */
export const containerStartNode: NodeHandler = {
  async run() {
    return { type: 'succeeded', outputs: {} };
  },
};

/** `loop-end`: reaching it ends the loop after the current round (Dify's "Exit Loop"). */
export const loopEndNode: NodeHandler = {
  async run() {
    return { type: 'succeeded', outputs: {} };
  },
};
