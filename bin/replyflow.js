#!/usr/bin/env node
// Runs the TypeScript CLI directly through tsx: no build step between a clone and `npm start`.
require('tsx/cjs');
require('../src/cli/main.ts').runCommandLine();
