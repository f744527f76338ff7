import type { ChatMessage } from '../llm/model-provider.js';

/**
 * Dify's `ReactMultiDatasetRouter` (`core/rag/retrieval/router/multi_dataset_react_route.py`): for a
 * basic app's `single` datasets when the app's model does not call functions, the datasets are
 * described as tools in a ReAct prompt and the model answers with one JSON action naming the
 * dataset. Prompt text and parsing are Dify's; nothing here does I/O.
 */

/** One dataset as a tool: its id and its description (newlines removed, as Dify). */
export interface RouterTool {
  readonly name: string;
  readonly description: string;
}

const PREFIX = 'Respond to the human as helpfully and accurately as possible. You have access to the following tools:';

const SUFFIX = 'Begin! Reminder to ALWAYS respond with a valid json blob of a single action. Use tools if necessary. Respond directly if appropriate. Format is Action:```$JSON_BLOB```then Observation:.\nThought:';

// Dify's completion suffix keeps `{input}` and `{agent_scratchpad}` as they are: its prompt
// transform fills only `{{…}}` variables, so a completion model is not shown the question.
const COMPLETION_SUFFIX =
  'Begin! Reminder to ALWAYS respond with a valid json blob of a single action. Use tools if necessary. Respond directly if appropriate. Format is Action:```$JSON_BLOB```then Observation:.\nQuestion: {input}\nThought: {agent_scratchpad}\n';

function formatInstructions(toolNames: string): string {
  return `Use a json blob to specify a tool by providing an action key (tool name) and an action_input key (tool input).
The nouns in the format of "Thought", "Action", "Action Input", "Final Answer" must be expressed in English.
Valid "action" values: "Final Answer" or ${toolNames}

Provide only ONE action per $JSON_BLOB, as shown:

\`\`\`
{
"action": $TOOL_NAME,
"action_input": $INPUT
}
\`\`\`

Follow this format:

Question: input question to answer
Thought: consider previous and subsequent steps
Action:
\`\`\`
$JSON_BLOB
\`\`\`
Observation: action result
... (repeat Thought/Action/Observation N times)
Thought: I know what to respond
Action:
\`\`\`
{
"action": "Final Answer",
"action_input": "Final response to human"
}
\`\`\``;
}

/** Where generation stops (Dify's `stop` of the router call). */
export const REACT_ROUTER_STOP = ['Observation:'] as const;

/** The chat prompt: the tools and the format in the system message, the query as the user's. */
export function reactRouterChatPrompt(query: string, tools: readonly RouterTool[]): ChatMessage[] {
  const described = tools
    .map((t) => `${t.name}: ${t.description}, args: {'query': {'title': 'Query', 'description': 'Query for the dataset to be used to retrieve the dataset.', 'type': 'string'}}`)
    .join('\n');
  // Dify joins a set of the names (no fixed order); here the app's order
  const names = [...new Set(tools.map((t) => t.name))].map((n) => `"${n}"`).join(', ');
  const system = [PREFIX, described, formatInstructions(names), SUFFIX].join('\n\n');
  return [
    { role: 'system', content: system },
    { role: 'user', content: query },
  ];
}

/** The completion prompt (a model in `completion` mode), as Dify's zero-shot template. */
export function reactRouterCompletionPrompt(tools: readonly RouterTool[]): string {
  const described = tools.map((t) => `${t.name}: ${t.description}`).join('\n');
  const names = tools.map((t) => t.name).join(', ');
  return [PREFIX, described, formatInstructions(names), COMPLETION_SUFFIX].join('\n\n');
}

/**
 * Python's `json.loads(…, strict=False)`: control characters inside strings are allowed. They are
 * escaped before `JSON.parse`.
 */
function parseLooseJson(text: string): unknown {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (inString) {
      if (ch === '\\') {
        out += ch + (text[i + 1] ?? '');
        i++;
        continue;
      }
      if (ch === '"') inString = false;
      const code = ch.charCodeAt(0);
      out += code < 0x20 ? `\\u${code.toString(16).padStart(4, '0')}` : ch;
      continue;
    }
    if (ch === '"') inString = true;
    out += ch;
  }
  return JSON.parse(out);
}

/** What the model decided: a tool (a dataset id, as it wrote it) or none. */
export type ReactDecision = { readonly kind: 'action'; readonly tool: unknown } | { readonly kind: 'finish' } | { readonly kind: 'unparsable' };

/**
 * Dify's `StructuredChatOutputParser`: the first fenced block starting with `{` is the action
 * (a list: its first item); `"Final Answer"` or no block is a finish; a block that is not JSON or
 * has no `action` cannot be parsed (Dify raises, and its router then picks no dataset).
 */
export function parseReactDecision(text: string): ReactDecision {
  const m = /```(\w*)\n?(\{.*?)```/s.exec(text);
  if (!m) return { kind: 'finish' };
  let response: unknown;
  try {
    response = parseLooseJson(m[2]!.trim());
  } catch {
    return { kind: 'unparsable' };
  }
  if (Array.isArray(response)) response = response[0];
  if (typeof response !== 'object' || response === null || !('action' in response)) return { kind: 'unparsable' };
  const action = (response as { action: unknown }).action;
  return action === 'Final Answer' ? { kind: 'finish' } : { kind: 'action', tool: action };
}
