// The sandbox is a local demo: on by default only for `replyflow start`, with secrets generated per
// data dir (none in the repository), and switched on elsewhere only with secrets given.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { SandboxSettingsError } from '../../src/errors';
import { resolveSandbox, sandboxSecretsFile } from '../../src/sandbox/settings';

const dataDir = () => mkdtempSync(path.join(os.tmpdir(), 'replyflow-sandbox-'));

describe('sandbox settings', () => {
  it('has no secret in the configuration defaults', () => {
    const config = loadConfig({});
    assert.equal(config.SANDBOX_WEBHOOK_SECRET, undefined);
    assert.equal(config.SANDBOX_API_TOKEN, undefined);
    assert.equal(config.SANDBOX_ENABLED, undefined);
  });

  it('is off for replyflow receiver and worker unless SANDBOX_ENABLED says otherwise', () => {
    const config = loadConfig({ REPLYFLOW_DATA_DIR: dataDir() });
    assert.equal(resolveSandbox(config, { local: false }).SANDBOX_ENABLED, false);
  });

  it('refuses to switch it on for a split role without both secrets, naming them', () => {
    const config = loadConfig({ SANDBOX_ENABLED: 'true', SANDBOX_API_TOKEN: 'a-token-of-sixteen-chars' });
    assert.throws(() => resolveSandbox(config, { local: false }), SandboxSettingsError);
  });

  it('takes the secrets from the environment for a split role', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const config = loadConfig({
      SANDBOX_ENABLED: 'true',
      SANDBOX_WEBHOOK_SECRET: secret,
      SANDBOX_API_TOKEN: 'a-token-of-sixteen-chars',
    });
    assert.deepEqual(resolveSandbox(config, { local: false }), {
      SANDBOX_ENABLED: true,
      SANDBOX_WEBHOOK_SECRET: secret,
      SANDBOX_API_TOKEN: 'a-token-of-sixteen-chars',
    });
  });

  it('generates secrets once per data dir for replyflow start, readable by the owner only', () => {
    const dir = dataDir();
    const first = resolveSandbox(loadConfig({ REPLYFLOW_DATA_DIR: dir }), { local: true });
    const again = resolveSandbox(loadConfig({ REPLYFLOW_DATA_DIR: dir }), { local: true });
    const elsewhere = resolveSandbox(loadConfig({ REPLYFLOW_DATA_DIR: dataDir() }), { local: true });
    assert.equal(first.SANDBOX_ENABLED, true);
    assert.match(first.SANDBOX_WEBHOOK_SECRET ?? '', /^whsec_[A-Za-z0-9+/]{40,}={0,2}$/);
    assert.ok((first.SANDBOX_API_TOKEN ?? '').length >= 32);
    assert.deepEqual(again, first);
    assert.notEqual(elsewhere.SANDBOX_WEBHOOK_SECRET, first.SANDBOX_WEBHOOK_SECRET);
    assert.notEqual(elsewhere.SANDBOX_API_TOKEN, first.SANDBOX_API_TOKEN);
    const file = sandboxSecretsFile(dir);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.ok(readFileSync(file, 'utf8').includes(first.SANDBOX_API_TOKEN!));
  });

  it('stays off for replyflow start with SANDBOX_ENABLED=false, generating nothing', () => {
    const dir = dataDir();
    assert.equal(
      resolveSandbox(loadConfig({ REPLYFLOW_DATA_DIR: dir, SANDBOX_ENABLED: 'false' }), { local: true })
        .SANDBOX_ENABLED,
      false,
    );
    assert.throws(() => statSync(sandboxSecretsFile(dir)), /ENOENT/);
  });
});
