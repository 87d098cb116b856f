// `replyflow start` stops what it started, also under load: Ctrl-C in the middle of a burst ends the
// launcher within a bounded wait, and leaves no Temporal dev server or PostgreSQL behind. The real
// executable on its embedded defaults (its own data dir and ports), a fake Slack as the target.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, portIsFree } from '../../src/ports';
import { eventually } from '../support/eventually';
import { FakeSlack } from '../support/fakes/slack';
import { signSlackRequest } from '../support/signers';
import { uniqueId } from '../support/system';

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'replyflow.js');
const SLACK_SECRET = 'start-under-load-signing-secret';
const SEND_TIMEOUT_S = 5;

describe('replyflow start under load, then Ctrl-C (the real executable, embedded defaults)', function () {
  this.timeout(300_000);

  it('stops the receiver, the worker, the dev server and PostgreSQL within a bounded wait', async () => {
    const parent = mkdtempSync(path.join(os.tmpdir(), 'replyflow-start-'));
    chmodSync(parent, 0o755); // as root, the embedded PostgreSQL runs as its own user
    const dataDir = path.join(parent, 'data');
    const slack = await new FakeSlack().start();
    // Some sends hang, so that Ctrl-C finds sends in flight.
    slack.next(...Array.from({ length: 20 }, () => 'hang' as const));
    const [port, devPort, uiPort] = [await freePort(), await freePort(), await freePort()];
    const child = spawn(process.execPath, [BIN, 'start'], {
      env: {
        ...process.env,
        REPLYFLOW_DATA_DIR: dataDir,
        PORT: String(port),
        TEMPORAL_DEV_PORT: String(devPort),
        TEMPORAL_UI_PORT: String(uiPort),
        TEMPORAL_ADDRESS: '',
        DATABASE_URL: '',
        WORKER_METRICS_PORT: '0',
        SLACK_SIGNING_SECRET: SLACK_SECRET,
        SLACK_BOT_TOKEN: slack.token,
        SLACK_API_URL: `${slack.url}/api/`,
        SEND_TIMEOUT: `${SEND_TIMEOUT_S}s`,
        LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => {
      output += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      output += c.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await eventually('replyflow is running', () => output.includes('replyflow is running'), {
        timeoutMs: 180_000,
        intervalMs: 200,
        abortIf: () => (child.exitCode === null ? undefined : `replyflow start exited:\n${output}`),
      });

      // A burst of Slack mentions (the default route answers what is addressed to the bot), each its own
      // conversation; Ctrl-C once a third are in.
      const receiver = `http://127.0.0.1:${port}`;
      let acked = 0;
      const deliver = async () => {
        const ts = `${Math.floor(Date.now() / 1000)}.${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}`;
        const body = JSON.stringify({
          type: 'event_callback',
          team_id: 'T1',
          event_id: uniqueId('Ev'),
          event_time: Math.floor(Date.now() / 1000),
          event: {
            type: 'app_mention',
            channel: uniqueId('C'),
            user: 'U1',
            text: '<@UBOT> hours?',
            ts,
            event_ts: ts,
          },
        });
        const response = await fetch(`${receiver}/webhooks/slack`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...signSlackRequest(SLACK_SECRET, body) },
          body,
        }).catch(() => undefined);
        if (response?.status === 202) acked += 1;
      };
      const load = Promise.all(
        Array.from({ length: 8 }, async () => {
          for (let i = 0; i < 40 && child.exitCode === null; i++) await deliver();
        }),
      );
      await eventually('a third of the burst acknowledged', () => acked >= 100, { timeoutMs: 120_000 });
      await eventually('sends under way (some hanging)', () => slack.posts().length >= 30, {
        timeoutMs: 120_000,
      });

      // The worker lets a send in flight finish (SEND_TIMEOUT); every other part has 15 s at most.
      const boundMs = (SEND_TIMEOUT_S + 15 + 15) * 1000;
      child.kill('SIGINT');
      let bound: NodeJS.Timeout | undefined;
      const stopped = await Promise.race([
        exited.then(() => true),
        new Promise<false>((resolve) => {
          bound = setTimeout(() => resolve(false), boundMs);
        }),
      ]);
      clearTimeout(bound);
      assert.ok(stopped, `replyflow start still running ${boundMs} ms after SIGINT:\n${output.slice(-3000)}`);
      await load;
      assert.ok(await portIsFree(devPort), 'no Temporal dev server left listening');
      assert.ok(await portIsFree(port), 'no receiver left listening');
      assert.ok(!existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), 'PostgreSQL stopped');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await slack.stop();
    }
  });
});
