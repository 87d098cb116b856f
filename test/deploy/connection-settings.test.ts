// The settings that take replyflow past one machine: TLS / API key for a secured Temporal frontend
// (Temporal Cloud or a self-hosted cluster) and the payload keyring that makes key rotation possible.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { loadConfig } from '../../src/config';
import { ConfigError } from '../../src/errors';
import { connectionSecurity, keyring, payloadCodec } from '../../src/temporal/client';
import { ConnectionSecurityError } from '../../src/temporal/errors';

const dir = mkdtempSync(path.join(os.tmpdir(), 'replyflow-tls-settings-'));
const file = (name: string, content: string) => {
  const full = path.join(dir, name);
  writeFileSync(full, content);
  return full;
};
const cert = file('client.pem', 'CLIENT CERT');
const key = file('client.key', 'CLIENT KEY');
const ca = file('ca.pem', 'SERVER CA');
const address = { TEMPORAL_ADDRESS: 'replyflow.a1b2c.tmprl.cloud:7233' };

describe('Temporal connection security from the environment', () => {
  it('connects in plaintext when nothing is set (a compose network or the embedded server)', () => {
    assert.deepEqual(connectionSecurity(loadConfig({})), { tls: false });
  });

  it('turns TLS on for an API key, as Temporal Cloud expects', () => {
    const security = connectionSecurity(loadConfig({ ...address, TEMPORAL_API_KEY: 'cloud-key' }));
    assert.equal(security.apiKey, 'cloud-key');
    assert.ok(security.tls, 'TLS is on');
  });

  it('keeps an API key in plaintext only when TEMPORAL_TLS=false says so (a local proxy)', () => {
    const security = connectionSecurity(
      loadConfig({ ...address, TEMPORAL_API_KEY: 'cloud-key', TEMPORAL_TLS: 'false' }),
    );
    assert.deepEqual(security, { tls: false, apiKey: 'cloud-key' });
  });

  it('reads the client certificate pair, the server CA and the server name for mTLS', () => {
    const security = connectionSecurity(
      loadConfig({
        ...address,
        TEMPORAL_TLS_CLIENT_CERT_PATH: cert,
        TEMPORAL_TLS_CLIENT_KEY_PATH: key,
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: ca,
        TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
      }),
    );
    assert.ok(security.tls);
    assert.equal(security.apiKey, undefined);
    assert.equal(security.tls.serverNameOverride, 'temporal.internal');
    assert.equal(Buffer.from(security.tls.serverRootCACertificate!).toString(), 'SERVER CA');
    assert.equal(Buffer.from(security.tls.clientCertPair!.crt).toString(), 'CLIENT CERT');
    assert.equal(Buffer.from(security.tls.clientCertPair!.key).toString(), 'CLIENT KEY');
  });

  it("sends the worker's requests uncompressed unless TEMPORAL_GRPC_COMPRESSION=gzip, and refuses another codec", () => {
    assert.equal(loadConfig({}).TEMPORAL_GRPC_COMPRESSION, 'none');
    assert.equal(
      loadConfig({ ...address, TEMPORAL_GRPC_COMPRESSION: 'gzip' }).TEMPORAL_GRPC_COMPRESSION,
      'gzip',
    );
    assert.throws(
      () => loadConfig({ TEMPORAL_GRPC_COMPRESSION: 'brotli' }),
      (err: unknown) => err instanceof ConfigError && /TEMPORAL_GRPC_COMPRESSION/.test(err.message),
    );
  });

  it('lists every problem at once, naming settings and paths but never file contents', () => {
    const missing = path.join(dir, 'nope.pem');
    assert.throws(
      () =>
        connectionSecurity(
          loadConfig({
            TEMPORAL_TLS: 'false',
            TEMPORAL_TLS_CLIENT_KEY_PATH: key,
            TEMPORAL_TLS_SERVER_CA_CERT_PATH: missing,
          }),
        ),
      (err: unknown) => {
        assert.ok(err instanceof ConnectionSecurityError);
        assert.equal(err.problems.length, 4, err.message);
        assert.match(err.message, /TEMPORAL_ADDRESS, which is unset/);
        assert.match(err.message, /TEMPORAL_TLS=false contradicts/);
        assert.match(err.message, /set both or neither/);
        assert.ok(err.message.includes(`TEMPORAL_TLS_SERVER_CA_CERT_PATH: cannot read ${missing} (ENOENT)`));
        assert.ok(!err.message.includes('CLIENT KEY'));
        return true;
      },
    );
  });
});

describe('payload key rotation', () => {
  const oldKey = randomBytes(32).toString('base64');
  const newKey = randomBytes(32).toString('base64');
  const payload = defaultPayloadConverter.toPayload({ text: 'where is my order?' });

  it('decrypts history written under the old key once the new key is current', async () => {
    const before = payloadCodec(oldKey, keyring(loadConfig({})));
    const [written] = await before.encode([payload]);
    const after = payloadCodec(
      newKey,
      keyring(
        loadConfig({
          REPLYFLOW_ENCRYPTION_KEY_ID: '2026-11',
          REPLYFLOW_DECRYPTION_KEYS: `default=${oldKey}`,
        }),
      ),
    );
    const [read] = await after.decode([written!]);
    assert.deepEqual(defaultPayloadConverter.fromPayload(read!), { text: 'where is my order?' });
    const [rewritten] = await after.encode([payload]);
    assert.equal(Buffer.from(rewritten!.metadata!['encryption-key-id']!).toString(), '2026-11');
  });

  it('lets processes that still encrypt with the old key read payloads of the new one (rolling deploy)', async () => {
    const rolledOut = payloadCodec(newKey, { keyId: '2026-11', decryptionKeys: { default: oldKey } });
    const notYet = payloadCodec(oldKey, { decryptionKeys: { '2026-11': newKey } });
    const [written] = await rolledOut.encode([payload]);
    const [read] = await notYet.decode([written!]);
    assert.deepEqual(defaultPayloadConverter.fromPayload(read!), { text: 'where is my order?' });
  });

  it('refuses a payload whose key id it does not hold, without naming any key', async () => {
    const [written] = await payloadCodec(newKey, { keyId: '2026-11' }).encode([payload]);
    await assert.rejects(payloadCodec(oldKey).decode([written!]), (err: Error) => {
      assert.match(err.message, /unknown key id "2026-11"/);
      assert.ok(!err.message.includes(newKey) && !err.message.includes(oldKey));
      return true;
    });
  });

  it('rejects malformed decryption keys without echoing them, and a current id listed as old', () => {
    const notAKey = 'c2hvcnQ=';
    assert.throws(
      () =>
        loadConfig({ REPLYFLOW_DECRYPTION_KEYS: `old=${notAKey}`, REPLYFLOW_ENCRYPTION_KEY_ID: 'bad id' }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.deepEqual(err.problems.map((p) => p.split(':')[0]).sort(), [
          'REPLYFLOW_DECRYPTION_KEYS',
          'REPLYFLOW_ENCRYPTION_KEY_ID',
        ]);
        assert.ok(!err.message.includes(notAKey));
        return true;
      },
    );
    assert.throws(
      () => payloadCodec(newKey, { decryptionKeys: { default: oldKey } }),
      /current key id "default"/,
    );
  });
});
