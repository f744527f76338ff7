/**
 * The types the engine takes from outside src/engine: the ports it calls (model providers, tools,
 * the Human Input gateway) and the data they carry. Type-only, so nothing here loads at run time.
 * Engine files import these through this file and nothing else from outside src/engine and
 * src/lib (eslint.config.js; test/engine/purity.test.ts checks it transitively).
 */
export type { ChatMessage, ContentPart, ModelProvider, ModelProviders, ToolCall, ToolDefinition } from '../llm/model-provider.js';
export type { Tool, ToolRef, ToolResultMessage, ToolRuntime } from '../tools/tool.js';
export type { HumanInputGateway, HumanInputRequired } from '../forms/human-input-port.js';
export type { DslDocument } from '../apps/dsl.js';
