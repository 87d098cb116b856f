// Mocha root hooks: whatever servers the tests started are stopped once at the end.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { installTestRuntime, stopServers } from './support/servers';

process.env.REPLYFLOW_SDK_LOG_LEVEL ??= 'ERROR';
// A `replyflow start` a test runs tells its runtime file to this run, not to the clone's CLI (src/running-start.ts).
process.env.REPLYFLOW_RUNTIME_FILE ??= path.join(
  mkdtempSync(path.join(os.tmpdir(), 'replyflow-run-')),
  'running.json',
);
installTestRuntime();

export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await stopServers();
  },
};
