import type { ToolDefinition } from '../ports.js';

/** Dify's ReAct (chat) system prompt; `{{instruction}}`, `{{tools}}` and `{{tool_names}}` are filled in. */
export const REACT_SYSTEM_PROMPT = `Respond to the human as helpfully and accurately as possible.

{{instruction}}

You have access to the following tools:

{{tools}}

Use a json blob to specify a tool by providing an action key (tool name) and an action_input key (tool input).
Valid "action" values: "Final Answer" or {{tool_names}}

Provide only ONE action per $JSON_BLOB, as shown:

\`\`\`
{
  "action": $TOOL_NAME,
  "action_input": $ACTION_INPUT
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
\`\`\`

Begin! Reminder to ALWAYS respond with a valid json blob of a single action. Use tools if necessary. Respond directly if appropriate. Format is Action:\`\`\`$JSON_BLOB\`\`\`then Observation:.`;

/** The system prompt with the tools the model may use (none on the last allowed round). */
export function reactSystemPrompt(instruction: string, tools: readonly ToolDefinition[]): string {
  const list = JSON.stringify(tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })), null, 4);
  const names = tools.map((t) => `"${t.name}"`).join(', ');
  return REACT_SYSTEM_PROMPT.replace('{{instruction}}', () => instruction).replace('{{tools}}', () => list).replace('{{tool_names}}', () => names);
}

/** One step already taken, as Dify writes it back into the scratchpad message. */
export interface ScratchpadUnit {
  readonly thought: string;
  readonly actionText: string;
  readonly observation: string;
}

export function scratchpadText(units: readonly ScratchpadUnit[]): string {
  let out = '';
  for (const u of units) {
    out += `Thought: ${u.thought}\n\n`;
    if (u.actionText) out += `Action: ${u.actionText}\n\n`;
    if (u.observation) out += `Observation: ${u.observation}\n\n`;
  }
  return out;
}
