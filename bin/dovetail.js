#!/usr/bin/env node
// Runs the TypeScript CLI directly through tsx, so the package needs no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli.ts');
await main(process.argv);
