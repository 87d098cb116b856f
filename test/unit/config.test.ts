import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  loadConfig,
  parseDuration,
  SLACK_MANIFEST_SCOPES,
  slackOAuthSettings,
  tracesExport,
} from '../../src/config';
import { ConfigError } from '../../src/errors';

describe('configuration read once at start (src/config.ts)', () => {
  it('applies defaults and treats empty strings as unset', () => {
    const config = loadConfig({ PORT: '', TEMPORAL_ADDRESS: '', DATABASE_URL: '  ' });
    assert.equal(config.PORT, 3000);
    assert.equal(config.TEMPORAL_ADDRESS, undefined);
    assert.equal(config.DATABASE_URL, undefined);
    assert.equal(config.TEMPORAL_NAMESPACE, 'default');
    assert.deepEqual(config.STANDARD_WEBHOOKS_SECRETS, {});
    assert.equal(config.SEND_TIMEOUT, 30_000);
    assert.deepEqual(config.HELD_REMINDERS, [900_000, 3_600_000, 14_400_000, 86_400_000]);
  });

  it('lists every problem at once and never echoes a secret value', () => {
    const secretLooking = 'not-base64-$ecret';
    assert.throws(
      () =>
        loadConfig({
          PORT: 'eighty',
          SLACK_API_URL: 'not a url',
          STANDARD_WEBHOOKS_SECRETS: 'orders',
          REPLYFLOW_ENCRYPTION_KEY: secretLooking,
          SEND_TIMEOUT: 'soon',
        }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        const fields = err.problems.map((p) => p.split(':')[0]).sort();
        assert.deepEqual(fields, [
          'PORT',
          'REPLYFLOW_ENCRYPTION_KEY',
          'SEND_TIMEOUT',
          'SLACK_API_URL',
          'STANDARD_WEBHOOKS_SECRETS',
        ]);
        assert.ok(!err.message.includes(secretLooking));
        return true;
      },
    );
  });

  it("bounds what a client may hold of the receiver by default, tighter than Node's own defaults", () => {
    const config = loadConfig({});
    assert.equal(config.RECEIVER_HEADERS_TIMEOUT, 10_000);
    assert.equal(config.RECEIVER_REQUEST_TIMEOUT, 30_000);
    assert.equal(config.RECEIVER_KEEP_ALIVE_TIMEOUT, 5_000);
    assert.equal(config.RECEIVER_MAX_CONNECTIONS, 1000);
  });

  it('refuses receiver limits that turn a limit off or cannot hold, each named', () => {
    const problemsOf = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return [];
      } catch (err) {
        assert.ok(err instanceof ConfigError);
        return err.problems.map((p) => p.split(':')[0]);
      }
    };
    assert.deepEqual(
      problemsOf({
        RECEIVER_HEADERS_TIMEOUT: '0s',
        RECEIVER_REQUEST_TIMEOUT: 'soon',
        RECEIVER_KEEP_ALIVE_TIMEOUT: '50ms',
        RECEIVER_MAX_CONNECTIONS: '0',
      }).sort(),
      [
        'RECEIVER_HEADERS_TIMEOUT',
        'RECEIVER_KEEP_ALIVE_TIMEOUT',
        'RECEIVER_MAX_CONNECTIONS',
        'RECEIVER_REQUEST_TIMEOUT',
      ],
    );
    // Node refuses a server whose headers may take longer than the whole request.
    assert.deepEqual(problemsOf({ RECEIVER_HEADERS_TIMEOUT: '1m', RECEIVER_REQUEST_TIMEOUT: '30s' }), [
      'RECEIVER_HEADERS_TIMEOUT',
    ]);
    assert.deepEqual(problemsOf({ RECEIVER_HEADERS_TIMEOUT: '30s', RECEIVER_REQUEST_TIMEOUT: '30s' }), []);
  });

  it('answers Slack mentions only by default, and reads the channels that get every message answered', () => {
    const defaults = loadConfig({ SLACK_REPLY_TO: '', SLACK_REPLY_TO_ALL_IN: ' ' });
    assert.equal(defaults.SLACK_REPLY_TO, 'mentions');
    assert.deepEqual(defaults.SLACK_REPLY_TO_ALL_IN, []);
    assert.equal(loadConfig({ SLACK_REPLY_TO: 'all' }).SLACK_REPLY_TO, 'all');
    assert.deepEqual(loadConfig({ SLACK_REPLY_TO_ALL_IN: 'C0123ABCD, G0456EFGH,' }).SLACK_REPLY_TO_ALL_IN, [
      'C0123ABCD',
      'G0456EFGH',
    ]);
  });

  it('lists every Slack reply setting problem, each channel on its own', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return [];
      } catch (err) {
        assert.ok(err instanceof ConfigError);
        return err.problems;
      }
    };
    const listed = problems({
      SLACK_REPLY_TO: 'everyone',
      SLACK_REPLY_TO_ALL_IN: '#general,C0123ABCD,D0456EFGH,c0789',
    });
    assert.deepEqual(
      listed.map((p) => p.split(':')[0]),
      ['SLACK_REPLY_TO', 'SLACK_REPLY_TO_ALL_IN', 'SLACK_REPLY_TO_ALL_IN', 'SLACK_REPLY_TO_ALL_IN'],
    );
    assert.match(listed[0]!, /mentions .* or all/);
    assert.match(listed[1]!, /"#general" is not a channel id/);
    assert.match(listed[2]!, /"D0456EFGH" is a direct message/);
    assert.match(listed[3]!, /"c0789" is not a channel id/);
    assert.deepEqual(problems({ SLACK_REPLY_TO: 'all', SLACK_REPLY_TO_ALL_IN: 'C0123ABCD' }), [
      'SLACK_REPLY_TO_ALL_IN: has no effect with SLACK_REPLY_TO=all, which answers every channel already (unset one of them)',
    ]);
  });

  it('parses Standard Webhooks secrets per source', () => {
    const config = loadConfig({ STANDARD_WEBHOOKS_SECRETS: 'orders=whsec_a, billing=whsec_b' });
    assert.deepEqual(config.STANDARD_WEBHOOKS_SECRETS, { orders: 'whsec_a', billing: 'whsec_b' });
  });

  it('parses durations', () => {
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('7d'), 604_800_000);
    assert.equal(parseDuration('7 days'), undefined);
  });

  it('trusts only the proxies named, and refuses settings that would trust every client', () => {
    assert.deepEqual(loadConfig({}).TRUST_PROXY, []);
    assert.deepEqual(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8, fd00::1' }).TRUST_PROXY, [
      'loopback',
      '10.0.0.0/8',
      'fd00::1',
    ]);
    for (const everyone of ['true', '1', '10.0.0.0/33', 'proxy.example', '10.0.0.1/8/1'])
      assert.throws(
        () => loadConfig({ TRUST_PROXY: everyone }),
        (err: unknown) => err instanceof ConfigError && err.problems[0]!.startsWith('TRUST_PROXY:'),
        everyone,
      );
  });

  it("takes Slack's OAuth credentials both or neither, naming the one missing, and the manifest's scopes by default", () => {
    assert.equal(slackOAuthSettings(loadConfig({})), undefined);
    for (const [set, missing] of [
      ['SLACK_CLIENT_ID', 'SLACK_CLIENT_SECRET'],
      ['SLACK_CLIENT_SECRET', 'SLACK_CLIENT_ID'],
    ] as const)
      assert.throws(
        () => loadConfig({ [set]: 'value-of-the-one-set' }),
        (err: unknown) =>
          err instanceof ConfigError &&
          err.problems.length === 1 &&
          err.problems[0]!.startsWith(`${missing}: set both`) &&
          !err.message.includes('value-of-the-one-set'),
        set,
      );
    const settings = slackOAuthSettings(loadConfig({ SLACK_CLIENT_ID: '1.2', SLACK_CLIENT_SECRET: 's' }));
    assert.deepEqual(settings?.scopes, [...SLACK_MANIFEST_SCOPES]);
    assert.equal(settings?.apiUrl, 'https://slack.com/api/');
    assert.deepEqual(loadConfig({ SLACK_SCOPES: 'chat:write, im:history' }).SLACK_SCOPES, [
      'chat:write',
      'im:history',
    ]);
    assert.throws(
      () => loadConfig({ SLACK_SCOPES: 'chat:write,<script>' }),
      (err: unknown) => err instanceof ConfigError && err.problems[0]!.startsWith('SLACK_SCOPES:'),
    );
    assert.throws(() => loadConfig({ SLACK_REDIRECT_URI: 'not a url' }), ConfigError);
  });

  describe('the GitHub App (GITHUB_APP_ID with GITHUB_APP_PRIVATE_KEY or its file)', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    /** As GitHub's settings page generates it: PKCS#1. */
    const pem = rsa.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
    const problemsOf = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return [];
      } catch (err) {
        assert.ok(err instanceof ConfigError);
        for (const secret of [pem, pem.split('\n')[1]!])
          assert.ok(!err.message.includes(secret), 'no key text');
        return err.problems;
      }
    };
    const file = (text: string) => {
      const name = path.join(mkdtempSync(path.join(os.tmpdir(), 'replyflow-app-key-')), 'app.pem');
      writeFileSync(name, text, { mode: 0o600 });
      return name;
    };

    it('reads the key from the variable, with \\n escapes as one line, or from the file', () => {
      const oneLine = pem.trim().replaceAll('\n', '\\n');
      for (const env of [
        { GITHUB_APP_PRIVATE_KEY: pem },
        { GITHUB_APP_PRIVATE_KEY: oneLine },
        { GITHUB_APP_PRIVATE_KEY_FILE: file(pem) },
        { GITHUB_APP_PRIVATE_KEY: rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
      ]) {
        const config = loadConfig({ GITHUB_APP_ID: '123456', ...env });
        assert.equal(config.GITHUB_APP_ID, '123456');
        const key = config.GITHUB_APP_PRIVATE_KEY ?? '';
        assert.match(
          key,
          /^-----BEGIN (RSA )?PRIVATE KEY-----\n[^\\]+-----END (RSA )?PRIVATE KEY-----\n$/,
          Object.keys(env)[0],
        );
      }
      assert.equal(
        loadConfig({ GITHUB_APP_PRIVATE_KEY_FILE: file(pem), GITHUB_APP_ID: '1' }).GITHUB_APP_PRIVATE_KEY,
        pem,
      );
      assert.equal(loadConfig({}).GITHUB_APP_PRIVATE_KEY, undefined);
    });

    it('wants both the id and the key, or neither', () => {
      assert.deepEqual(problemsOf({ GITHUB_APP_ID: '123456' }), [
        "GITHUB_APP_PRIVATE_KEY: set the app's private key (or GITHUB_APP_PRIVATE_KEY_FILE) with GITHUB_APP_ID, or unset both",
      ]);
      assert.deepEqual(problemsOf({ GITHUB_APP_PRIVATE_KEY: pem }), [
        "GITHUB_APP_ID: set the app's App ID with its private key, or unset both",
      ]);
      assert.deepEqual(
        problemsOf({ GITHUB_APP_PRIVATE_KEY_FILE: file(pem) }).map((p) => p.split(':')[0]),
        ['GITHUB_APP_ID'],
      );
      assert.deepEqual(
        problemsOf({ GITHUB_APP_ID: 'my-app', GITHUB_APP_PRIVATE_KEY: pem }).map((p) => p.split(':')[0]),
        ['GITHUB_APP_ID'],
      );
    });

    it('refuses at start a key that is not a readable RSA private key, without printing it', () => {
      const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
        type: 'pkcs8',
        format: 'pem',
      });
      const encrypted = rsa.privateKey.export({
        type: 'pkcs8',
        format: 'pem',
        cipher: 'aes-256-cbc',
        passphrase: 'secret',
      });
      const publicKey = rsa.publicKey.export({ type: 'spki', format: 'pem' });
      for (const bad of [
        pem.split('\n')[0]!,
        pem.replace(/[A-Za-z]{8}/, 'AAAAAAAA'),
        String(ec),
        String(encrypted),
        String(publicKey),
        'ghp_token',
      ]) {
        assert.deepEqual(problemsOf({ GITHUB_APP_ID: '1', GITHUB_APP_PRIVATE_KEY: bad }), [
          "GITHUB_APP_PRIVATE_KEY: not a readable RSA private key in PEM form (use the .pem file the app's settings page generates, unencrypted)",
        ]);
      }
      assert.deepEqual(
        problemsOf({ GITHUB_APP_ID: '1', GITHUB_APP_PRIVATE_KEY_FILE: file('not a key') }).map(
          (p) => p.split(':')[0],
        ),
        ['GITHUB_APP_PRIVATE_KEY_FILE'],
      );
    });

    it('names an unreadable file, and a key set both ways', () => {
      assert.deepEqual(
        problemsOf({ GITHUB_APP_ID: '1', GITHUB_APP_PRIVATE_KEY_FILE: '/nonexistent/app.pem' }),
        ['GITHUB_APP_PRIVATE_KEY_FILE: cannot read the file (ENOENT)'],
      );
      assert.deepEqual(
        problemsOf({
          GITHUB_APP_ID: '1',
          GITHUB_APP_PRIVATE_KEY: pem,
          GITHUB_APP_PRIVATE_KEY_FILE: file(pem),
        }),
        ['GITHUB_APP_PRIVATE_KEY_FILE: set the key or the file that holds it, not both'],
      );
    });
  });

  it('keeps traces off unless an OTEL_* variable turns them on, and then exports where they say', () => {
    assert.equal(tracesExport(loadConfig({})), undefined);
    assert.equal(tracesExport(loadConfig({ OTEL_SERVICE_NAME: 'x' })), undefined);
    assert.equal(
      tracesExport(
        loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }),
      ),
      undefined,
    );
    assert.equal(
      tracesExport(
        loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }),
      ),
      undefined,
    );
    assert.deepEqual(
      tracesExport(
        loadConfig({
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
          OTEL_EXPORTER_OTLP_HEADERS: 'api-key=a%3Db',
        }),
      ),
      {
        exporter: 'otlp',
        serviceName: 'replyflow',
        url: 'http://collector:4318/v1/traces',
        headers: { 'api-key': 'a=b' },
      },
    );
    assert.deepEqual(tracesExport(loadConfig({ OTEL_TRACES_EXPORTER: 'console', OTEL_SERVICE_NAME: 'rf' })), {
      exporter: 'console',
      serviceName: 'rf',
    });
    assert.throws(
      () => loadConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_HEADERS: 'secret-value' }),
      (err: unknown) =>
        err instanceof ConfigError &&
        /OTEL_EXPORTER_OTLP_PROTOCOL: .*http\/json/.test((err as Error).message) &&
        /OTEL_EXPORTER_OTLP_HEADERS: expected key=value/.test((err as Error).message) &&
        !(err as Error).message.includes('secret-value'),
    );
  });
});
