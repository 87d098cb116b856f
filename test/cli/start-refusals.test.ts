// A start that is refused, as a person at the terminal sees it from the real executable: one line on
// stderr naming what to change, and the exit code docs/cli.md gives (2: invalid settings; 1: what
// stops the start after them); the stack follows only with LOG_LEVEL=debug.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/temporal/binaries';
import { database, TEST_ENCRYPTION_KEY } from '../support/servers';

interface Exit {
  code: number | null;
  stderr: string;
}

/** `replyflow <role>` with only `env` set (and PATH, HOME), run until it exits. */
function replyflow(role: 'start' | 'receiver' | 'worker', env: Record<string, string>): Promise<Exit> {
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'bin/replyflow.js'), role], {
    cwd: PROJECT_ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME ?? os.tmpdir(),
      REPLYFLOW_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'replyflow-refused-')),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stderr }));
  });
}

/** The one line a refusal prints; fails when there is more (or nothing). */
function oneLine(exit: Exit): string {
  const lines = exit.stderr.split('\n').filter((line) => line.trim() !== '');
  assert.equal(lines.length, 1, `one line on stderr, got:\n${exit.stderr}`);
  return lines[0]!;
}

/** A worker or receiver against the test database; Temporal at a closed port (never reached). */
async function splitRoleEnv(): Promise<Record<string, string>> {
  return {
    DATABASE_URL: (await database()).url,
    TEMPORAL_ADDRESS: '127.0.0.1:1',
    REPLYFLOW_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    WORKER_METRICS_PORT: '0',
  };
}

describe('start refusals (real executable)', function () {
  this.timeout(60_000);

  it('names DATABASE_URL when PostgreSQL cannot be reached, never its password, and exits 1', async () => {
    const exit = await replyflow('worker', {
      ...(await splitRoleEnv()),
      DATABASE_URL: 'postgres://replyflow:not-to-be-printed@127.0.0.1:1/replyflow',
    });
    assert.equal(exit.code, 1);
    const line = oneLine(exit);
    assert.match(
      line,
      /^replyflow: cannot reach PostgreSQL at 127\.0\.0\.1:1 \(DATABASE_URL\): .*ECONNREFUSED/,
    );
    assert.doesNotMatch(line, /not-to-be-printed/);
  });

  // (A receiver does not stop for it: it answers 503 until Temporal can take events.)
  it('names TEMPORAL_ADDRESS when the worker cannot reach Temporal, and exits 1', async () => {
    const exit = await replyflow('worker', await splitRoleEnv());
    assert.equal(exit.code, 1);
    assert.match(oneLine(exit), /^replyflow: cannot reach Temporal at 127\.0\.0\.1:1 \(TEMPORAL_ADDRESS\): /);
  });

  it('refuses an invalid setting in one line naming it, and exits 2', async () => {
    const exit = await replyflow('start', { SEND_TIMEOUT: 'abc' });
    assert.equal(exit.code, 2);
    assert.match(oneLine(exit), /^replyflow: invalid configuration: SEND_TIMEOUT: expected a duration/);
  });

  it('lists several invalid settings in that one line', async () => {
    const exit = await replyflow('start', { SEND_TIMEOUT: 'abc', PORT: 'eighty', LOG_LEVEL: 'loud' });
    assert.equal(exit.code, 2);
    const line = oneLine(exit);
    for (const setting of ['SEND_TIMEOUT', 'PORT', 'LOG_LEVEL'])
      assert.match(line, new RegExp(`${setting}:`));
  });

  it('refuses a route file that does not exist in one line naming ROUTES_FILE, and exits 2', async () => {
    const missing = path.join(os.tmpdir(), 'no-such-dir', 'routes.yaml');
    const exit = await replyflow('worker', { ...(await splitRoleEnv()), ROUTES_FILE: missing });
    assert.equal(exit.code, 2);
    assert.equal(
      oneLine(exit),
      `replyflow: invalid route file ${missing} (ROUTES_FILE): (file): cannot read the file (ENOENT) (replyflow routes check ${missing} lists them without starting anything)`,
    );
  });

  it("refuses a route file that is not YAML in one line, without the parser's excerpt of the file", async () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'replyflow-routes-')), 'routes.yaml');
    writeFileSync(file, 'routes:\n  - provider: [unclosed\n');
    const exit = await replyflow('worker', { ...(await splitRoleEnv()), ROUTES_FILE: file });
    assert.equal(exit.code, 2);
    const line = oneLine(exit);
    assert.match(
      line,
      /^replyflow: invalid route file .* \(ROUTES_FILE\): \(file\): not valid YAML: .*line \d+/,
    );
    assert.ok(!line.includes('[unclosed'), 'the file itself is not quoted');
  });

  for (const role of ['receiver', 'worker'] as const)
    it(`refuses (${role}) a TENANTS_FILE naming a variable that is not set in one line with the entry's path, and exits 2`, async () => {
      const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'replyflow-tenants-')), 'tenants.yaml');
      const destination = `U${'e'.repeat(32)}`;
      writeFileSync(
        file,
        `line:\n  - destination: ${destination}\n    channelSecretEnv: SHOP_SECRET\n    accessTokenEnv: SHOP_TOKEN\n`,
      );
      const exit = await replyflow(role, {
        ...(await splitRoleEnv()),
        TENANTS_FILE: file,
        SHOP_SECRET: 'a-secret-that-is-set',
      });
      assert.equal(exit.code, 2);
      const line = oneLine(exit);
      assert.equal(
        line,
        `replyflow: invalid tenants file ${file} (TENANTS_FILE): line[0].accessTokenEnv: environment variable SHOP_TOKEN is not set`,
      );
    });

  it('refuses a bot module that cannot be used in one line naming RESPONDER_MODULE, before starting anything', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'replyflow-bot-'));
    const missing = path.join(dir, 'bot.ts');
    const gone = await replyflow('start', { RESPONDER_MODULE: missing });
    assert.equal(gone.code, 2);
    assert.equal(
      oneLine(gone),
      `replyflow: invalid configuration: RESPONDER_MODULE ${missing}: no such file`,
    );
    const quiet = path.join(dir, 'quiet.ts');
    writeFileSync(quiet, 'export const answer = 42;\n');
    const wrong = await replyflow('start', { RESPONDER_MODULE: quiet });
    assert.equal(wrong.code, 2);
    assert.equal(
      oneLine(wrong),
      `replyflow: invalid configuration: RESPONDER_MODULE ${quiet}: exports no function \`respond(event)\``,
    );
  });

  describe('a port in use', () => {
    let holder: http.Server;
    let port: number;
    before(async () => {
      holder = http.createServer();
      await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
      port = (holder.address() as AddressInfo).port;
    });
    after(() => holder?.close());

    it('is refused in one line naming PORT, exit 1; the stack follows only at LOG_LEVEL=debug', async () => {
      const env = { ...(await splitRoleEnv()), PORT: String(port) };
      const atInfo = await replyflow('receiver', env);
      assert.equal(atInfo.code, 1);
      assert.match(oneLine(atInfo), new RegExp(`^replyflow: PORT ${port} is already in use .*set PORT`));

      const atDebug = await replyflow('receiver', { ...env, LOG_LEVEL: 'debug' });
      assert.equal(atDebug.code, 1);
      const [first, ...rest] = atDebug.stderr.split('\n');
      assert.equal(first, oneLine(atInfo));
      assert.match(rest.join('\n'), /^\S*Error: .*\n\s+at /);
    });

    it('is refused for the embedded Temporal in one line naming TEMPORAL_DEV_PORT, before PostgreSQL starts, exit 1', async () => {
      const dataDir = mkdtempSync(path.join(os.tmpdir(), 'replyflow-refused-'));
      const exit = await replyflow('start', {
        REPLYFLOW_DATA_DIR: dataDir,
        TEMPORAL_DEV_PORT: String(port),
        LOG_LEVEL: 'silent',
      });
      assert.equal(exit.code, 1);
      assert.match(
        oneLine(exit),
        new RegExp(
          `^replyflow: TEMPORAL_DEV_PORT ${port} \\(the embedded Temporal's gRPC port\\) is already in use on 127\\.0\\.0\\.1: .*set TEMPORAL_DEV_PORT to another port, or set TEMPORAL_ADDRESS`,
        ),
      );
      assert.ok(!existsSync(path.join(dataDir, 'postgres')), 'no PostgreSQL was started for nothing');
    });
  });
});
