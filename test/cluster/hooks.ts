// Mocha root hooks of `npm run test:cluster`: at the end, the servers test/support started (its
// database pool), then the cluster command and its PostgreSQL.
import { installTestRuntime, stopServers } from '../support/servers';
import { stopClusterFixtures } from './fixture';

process.env.REPLYFLOW_SDK_LOG_LEVEL ??= 'ERROR';
installTestRuntime();

export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    this.timeout(120_000);
    await stopServers();
    await stopClusterFixtures();
  },
};
