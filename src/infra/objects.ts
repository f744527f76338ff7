/**
 * Kept for the modules that import it from here (others are moving files at the same time); the
 * helpers live in src/lib/objects.ts, shared with the engine.
 */
export { isObject, objectOf } from '../lib/objects.js';
