// Mocha root hooks: whatever servers the tests started are stopped once at the end.
import { installTestRuntime, stopServers } from './helpers/servers';

process.env.REPLYFLOW_SDK_LOG_LEVEL ??= 'ERROR';
installTestRuntime();

export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await stopServers();
  },
};
