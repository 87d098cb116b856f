// Mocha's spec reporter, plus one line per test file with its wall time, hooks included (servers
// started in a `before` count too): scripts/run-tests.ts lists the slowest, so that what makes
// `npm test` long is in its own output.
import Mocha from 'mocha';

const { EVENT_SUITE_BEGIN, EVENT_SUITE_END } = Mocha.Runner.constants;
// scripts/run-tests.ts reads these lines by this prefix.
const FILE_TIME_PREFIX = '[file-time]';

class FileTimingReporter extends Mocha.reporters.Spec {
  constructor(runner: Mocha.Runner, options: Mocha.MochaOptions) {
    super(runner, options);
    const began = new Map<string, number>();
    const spent = new Map<string, number>();
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.parent?.root && suite.file && !began.has(suite.file)) began.set(suite.file, Date.now());
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      if (!suite.parent?.root || !suite.file) return;
      spent.set(suite.file, Date.now() - (began.get(suite.file) ?? Date.now()));
    });
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      for (const [file, ms] of spent) console.log(`${FILE_TIME_PREFIX} ${ms} ${file}`);
    });
  }
}

module.exports = FileTimingReporter;
