#!/usr/bin/env node
// Runs the TypeScript CLI directly through tsx: no build step between a clone and `npm start`.
process.env.REPLYFLOW_CLI = '1';
require('tsx/cjs');
require('../src/cli/main.ts');
