// Worker-thread bootstrap of TextOffload: the worker is TypeScript like the rest of the server, so
// register tsx in this thread (as bin/dovetail.js does for the main one), then load the entry.
import { register } from 'tsx/esm/api';

register();
await import('./offload-worker.ts');
