// Two receivers and two workers as separate processes on the dev server: test/support/multi-process.ts.
import { multiProcessSuite } from '../support/multi-process';
import { database, devServer } from '../support/servers';

describe('two receivers and two workers as separate processes (one dev server, one PostgreSQL)', function () {
  this.timeout(300_000);
  multiProcessSuite(async () => {
    const [server, db] = await Promise.all([devServer(), database()]);
    return { temporalAddress: server.address, databaseUrl: db.url };
  });
});
