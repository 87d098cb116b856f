// `npm run cluster:install`: builds the pinned Temporal server and its SQL tool into .tools/ (skipped
// when they are there), for `replyflow cluster` and `npm run test:cluster`.

import { TemporalServerInstallError } from '../src/cluster/errors';
import { installTemporalServer, TEMPORAL_SERVER_VERSION } from '../src/cluster/install';

installTemporalServer((line) => console.log(`replyflow: ${line}`)).then(
  ({ binaries, built, seconds }) => {
    console.log(
      `replyflow: Temporal server ${TEMPORAL_SERVER_VERSION} ${built ? `built in ${seconds.toFixed(0)} s` : 'already installed'}: ${binaries.server}, ${binaries.sqlTool}`,
    );
  },
  (err: Error) => {
    console.error(`replyflow: ${err instanceof TemporalServerInstallError ? err.message : err.stack}`);
    process.exit(1);
  },
);
