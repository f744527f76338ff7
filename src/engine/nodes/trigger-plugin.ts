import { NodeFailure, type GraphNode, type NodeHandler } from '../types.js';

/** Dify's `trigger-plugin` node (1.10): a run started by an event of a trigger plugin's subscription. */

/** The plugin a plugin trigger names: `plugin_id` (e.g. `langgenius/github_trigger`), else its provider. */
export function triggerPluginName(node: GraphNode): string {
  const d = node.data;
  for (const key of ['plugin_id', 'provider_id', 'provider_name']) {
    const v = d[key];
    if (typeof v === 'string' && v !== '') return v;
  }
  return 'an unnamed plugin';
}

function eventName(node: GraphNode): string {
  const v = node.data.event_name;
  return typeof v === 'string' && v !== '' ? ` (event ${v})` : '';
}

/**
 * Dovetail runs no plugins: the app imports with a warning naming the plugin, runs from its other
 * entry points, and a run that starts here fails naming the node and the plugin.
 */
export const triggerPluginNode: NodeHandler = {
  importWarnings(node) {
    const plugin = triggerPluginName(node);
    return [
      {
        node_id: node.id,
        node_type: node.type,
        part: `trigger plugin ${plugin}`,
        setting: null,
        message: `node ${node.id} (trigger-plugin) is started by the trigger plugin ${plugin}${eventName(node)}, and Dovetail runs no plugins: the app runs from its other entry points only`,
      },
    ];
  },
  async run(ctx) {
    throw new NodeFailure(`node ${ctx.node.id} (trigger-plugin) cannot run: it is started by the trigger plugin ${triggerPluginName(ctx.node)}, and Dovetail runs no plugins`, 'TriggerPluginUnavailable', false);
  },
};
