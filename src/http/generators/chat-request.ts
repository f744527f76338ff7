import type { FastifyReply } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import type { App } from '../../apps/app-service.js';
import type { AppMode } from '../../apps/dsl.js';

/** The body of `POST /chat-messages`, for every chat-family mode. */
export const ChatBody = Type.Object({
  query: Type.String(),
  inputs: Type.Object({}, { additionalProperties: true }),
  response_mode: Type.Optional(Type.Union([Type.Literal('blocking'), Type.Literal('streaming'), Type.Null()])),
  conversation_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  user: Type.Optional(Type.Unknown()),
  files: Type.Optional(Type.Union([Type.Array(Type.Unknown()), Type.Null()])),
  auto_generate_name: Type.Optional(Type.Boolean()),
  workflow_id: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'Accepted and not used: an app has one published workflow.' })),
});
export type ChatBody = Static<typeof ChatBody>;

/** A validated `POST /chat-messages`: the app, the caller's `user`, the body, and the reply to write to. */
export interface ChatRequest {
  readonly app: App;
  readonly user: string;
  /** The caller's end user, created on first use (resolved once per request). */
  readonly endUser: () => Promise<{ readonly id: string }>;
  readonly body: ChatBody;
  readonly streaming: boolean;
  readonly reply: FastifyReply;
}

/** One app mode's answer to `POST /chat-messages`: checks what the mode refuses, runs, writes the reply. */
export type ChatGenerator = (request: ChatRequest) => Promise<unknown>;

/** A validated `POST /chat-messages/{task_id}/stop`. */
export interface ChatStopRequest {
  readonly app: App;
  readonly user: string;
  /** The caller's end user if there is one (stopping never creates one). */
  readonly findEndUser: () => Promise<{ readonly id: string } | undefined>;
  readonly taskId: string;
}

/** One app mode's `POST /chat-messages/{task_id}/stop`. */
export type ChatStopper = (request: ChatStopRequest) => Promise<void>;

/** The generators by app mode; a mode without one is not a chat app. */
export type ChatGenerators = Partial<Record<AppMode, ChatGenerator>>;
export type ChatStoppers = Partial<Record<AppMode, ChatStopper>>;
