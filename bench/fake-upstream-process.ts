/**
 * Runs the local OpenAI-compatible upstream (test/helpers/fake-openai.ts) in its own process for
 * benchmarks, so its token generation does not share an event loop with the server being measured.
 * The behaviour comes as JSON in argv[2]; the base URL is sent to the parent over IPC.
 */
import { startFakeOpenAI, type FakeBehaviour } from '../test/helpers/fake-openai.js';

const fake = await startFakeOpenAI(JSON.parse(process.argv[2] ?? '{}') as FakeBehaviour);
process.send?.({ baseUrl: fake.baseUrl });
process.on('disconnect', () => void fake.close().then(() => process.exit(0)));
