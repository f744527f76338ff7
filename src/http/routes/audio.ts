import { Readable } from 'node:stream';
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { DEFAULT_USER } from '../../apps/end-users.js';
import { noAudioUploaded } from '../../audio/errors.js';
import type { Runtime } from '../../runtime.js';
import { requireApp } from '../auth.js';
import { requireJson } from '../json-body.js';
import { userArg } from '../request-user.js';
import { multipartRoutes, readFileForm } from '../multipart-upload.js';
import { UploadForm } from '../knowledge-schemas.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type AudioRouteDeps = Pick<Runtime, 'audio'>;

const AudioToTextResponse = Type.Object({ text: Type.String() });
const TextToAudioBody = Type.Object({
  message_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  text: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  user: Type.Optional(Type.String()),
  voice: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  // Accepted and ignored, as Dify: the audio always streams.
  streaming: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
});

/**
 * `POST /audio-to-text` (multipart `file` + optional `user`; Dify's checks in Dify's order) and
 * `POST /text-to-audio` (JSON; the upstream's audio is streamed through, not buffered).
 */
export const audioRoutes: FastifyPluginAsync<{ runtime: AudioRouteDeps }> = async (app, { runtime }) => {
  await multipartRoutes(app, (mp) =>
    mp.post('/audio-to-text', { schema: { consumes: ['multipart/form-data'], body: UploadForm, response: { 200: AudioToTextResponse } } }, async (request) => {
      const a = requireApp(request);
      runtime.audio.requireSpeechToText(a);
      const { file, fields } = await readFileForm(request, (f) => runtime.audio.receive(f));
      if (!file) throw noAudioUploaded();
      return { text: await runtime.audio.transcribe(a, file, userArg(request, fields.user || DEFAULT_USER)) };
    }),
  );

  app.post<{ Body: Static<typeof TextToAudioBody> }>(
    '/text-to-audio',
    { preValidation: requireJson, schema: { body: TextToAudioBody } },
    async (request, reply) => {
      const b = request.body;
      const audio = await runtime.audio.speak(requireApp(request), {
        messageId: b.message_id ?? undefined,
        text: b.text ?? undefined,
        voice: b.voice ?? undefined,
        user: userArg(request, b.user || DEFAULT_USER),
      });
      return reply.code(200).header('content-type', audio.contentType).send(Readable.fromWeb(audio.body as import('node:stream/web').ReadableStream));
    },
  );
};
