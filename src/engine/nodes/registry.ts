import type { NodeHandler, NodeType } from '../types.js';
import { agentNode } from './agent.js';
import { answerNode } from './answer.js';
import { assignerNode } from './assigner.js';
import { codeNode } from './code.js';
import { containerStartNode, loopEndNode } from './container-start.js';
import { endNode } from './end.js';
import { humanInputNode } from './human-input.js';
import { ifElseNode } from './if-else.js';
import { httpRequestNode } from './http-request.js';
import { iterationNode } from './iteration.js';
import { knowledgeRetrievalNode } from './knowledge-retrieval.js';
import { knowledgeRetrievalV2Node } from './knowledge-retrieval-v2.js';
import { listOperatorNode } from './list-operator.js';
import { documentExtractorNode } from './document-extractor.js';
import { datasourceNode } from './datasource.js';
import { knowledgeIndexNode } from './knowledge-index.js';
import { llmNode } from './llm.js';
import { loopNode } from './loop.js';
import { parameterExtractorNode } from './parameter-extractor.js';
import { questionClassifierNode } from './question-classifier.js';
import { startNode } from './start.js';
import { templateTransformNode } from './template-transform.js';
import { toolNode } from './tool.js';
import { triggerPluginNode } from './trigger-plugin.js';
import { triggerScheduleNode } from './trigger-schedule.js';
import { triggerWebhookNode } from './trigger-webhook.js';
import { variableAggregatorNode } from './variable-aggregator.js';

/** Every node type's handler; adding a type means one file in this folder and one line here. */
export const NODE_HANDLERS: Readonly<Record<NodeType, NodeHandler>> = {
  start: startNode,
  end: endNode,
  answer: answerNode,
  llm: llmNode,
  'template-transform': templateTransformNode,
  'if-else': ifElseNode,
  'variable-aggregator': variableAggregatorNode,
  'human-input': humanInputNode,
  'knowledge-retrieval': knowledgeRetrievalNode,
  loop: loopNode,
  'loop-start': containerStartNode,
  'loop-end': loopEndNode,
  assigner: assignerNode,
  code: codeNode,
  iteration: iterationNode,
  'iteration-start': containerStartNode,
  'http-request': httpRequestNode,
  tool: toolNode,
  // the type name older exports use for the variable aggregator (same data, same outputs)
  'variable-assigner': variableAggregatorNode,
  'knowledge-retrieval-v2': knowledgeRetrievalV2Node,
  'list-operator': listOperatorNode,
  'document-extractor': documentExtractorNode,
  'question-classifier': questionClassifierNode,
  'parameter-extractor': parameterExtractorNode,
  agent: agentNode,
  'trigger-webhook': triggerWebhookNode,
  'trigger-schedule': triggerScheduleNode,
  'trigger-plugin': triggerPluginNode,
  datasource: datasourceNode,
  'knowledge-index': knowledgeIndexNode,
};
