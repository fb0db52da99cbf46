#!/usr/bin/env node
// The openline command: runs the TypeScript CLI through tsx, so no build step is needed.
import process from 'node:process';
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/index.ts');
process.exitCode = await main(process.argv.slice(2));
