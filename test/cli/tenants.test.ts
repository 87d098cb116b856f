// Tenants from the CLI: the admin adds, lists, rotates and removes LINE channels and Slack teams, the
// secrets read from the environment variables the options name or from stdin (never the command
// line), sealed under the payload key, each change an audit row by `admin:<OS user>`; nothing the CLI
// prints, and no refusal, contains a secret. Real PostgreSQL, the real executable for stdin.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTenantCredentialStore } from '../../src/db/tenant-credentials';
import { payloadCodec } from '../../src/temporal/client';
import { database, TEST_ENCRYPTION_KEY } from '../support/servers';
import { auditRows } from '../support/workflows';
import { adminEnv, type CliResult, cli, cliProcess } from './harness';

const ADMIN = `admin:${os.userInfo().username}`;
const lineTenant = () => `line:U${randomBytes(16).toString('hex')}`;
const slackTenant = () => `slack:T${randomBytes(5).toString('hex').toUpperCase()}`;
const secretValue = (what: string) => `${what}-${randomBytes(12).toString('hex')}`;

describe('tenant CLI: LINE channels and Slack teams for the admin (PostgreSQL)', function () {
  this.timeout(120_000);

  const store = async () =>
    createTenantCredentialStore((await database()).adminPool, payloadCodec(TEST_ENCRYPTION_KEY));
  /** The CLI as the admin runs it: the admin credential and the payload key, plus `env`. */
  const admin = async (argv: string[], env: Record<string, string> = {}, secret?: string) =>
    cli(argv, { env: await adminEnv({ REPLYFLOW_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, ...env }), secret });
  const printedNone = (result: CliResult, ...secrets: string[]) => {
    for (const secret of secrets) {
      assert.ok(!result.stdout.includes(secret), 'stdout carries no secret');
      assert.ok(!result.stderr.includes(secret), 'stderr carries no secret');
    }
  };

  it('adds a LINE channel from the variables its options name, lists, rotates and removes it, each change audited', async () => {
    const tenant = lineTenant();
    const [channelSecret, accessToken, reissued] = ['secret', 'token', 'reissued'].map(secretValue) as [
      string,
      string,
      string,
    ];
    const env = { LINE_SECRET_B: channelSecret, LINE_TOKEN_B: accessToken, LINE_TOKEN_B2: reissued };

    const added = await admin(
      [
        'tenant',
        'add',
        tenant,
        '--channel-secret-env',
        'LINE_SECRET_B',
        '--access-token-env',
        'LINE_TOKEN_B',
        '--name',
        'Shop B',
        '--reason',
        'new client',
      ],
      env,
    );
    assert.equal(added.code, 0, added.stderr);
    assert.match(
      added.stdout,
      new RegExp(`^Added ${tenant} "Shop B" \\(source admin\\)\\. .*LINE_CHANNELS=tenants`),
    );
    printedNone(added, channelSecret, accessToken);
    const row = await (await store()).get(tenant);
    assert.deepEqual(row?.secret, { channelSecret, accessToken });
    assert.deepEqual(
      [row?.record.source, row?.record.provider, row?.record.details],
      ['admin', 'line', { name: 'Shop B' }],
    );
    const { rows: raw } = await (await database()).adminPool.query(
      'SELECT secret FROM tenant_credentials WHERE tenant = $1',
      [tenant],
    );
    assert.ok(!raw[0].secret.toString('latin1').includes(accessToken), 'the table holds ciphertext');

    const listed = await admin(['tenant', 'list', '--provider', 'line', '--json']);
    assert.equal(listed.code, 0, listed.stderr);
    const entry = (JSON.parse(listed.stdout) as Record<string, unknown>[]).find((t) => t.tenant === tenant);
    assert.deepEqual(
      [entry?.provider, entry?.source, entry?.details, entry?.expiresAt, entry?.revokedAt],
      ['line', 'admin', { name: 'Shop B' }, null, null],
    );
    printedNone(listed, channelSecret, accessToken);
    const table = await admin(['tenant', 'list']);
    assert.match(table.stdout.split('\n')[0]!, /^TENANT\s+PROVIDER\s+SOURCE\s+DETAILS\s+EXPIRES\s+REVOKED$/);
    assert.match(table.stdout, new RegExp(`${tenant}\\s+line\\s+admin\\s+\\{"name":"Shop B"\\}`));

    const again = await admin(
      [
        'tenant',
        'add',
        tenant,
        '--channel-secret-env',
        'LINE_SECRET_B',
        '--access-token-env',
        'LINE_TOKEN_B',
      ],
      env,
    );
    assert.equal(again.code, 2);
    assert.match(again.stderr, /exists already \(source admin\): `replyflow tenant rotate/);

    // The access token is reissued; the channel secret stays.
    const rotated = await admin(
      ['tenant', 'rotate', tenant, '--access-token-env', 'LINE_TOKEN_B2', '--reason', 'token reissued'],
      env,
    );
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, new RegExp(`^Rotated accessToken of ${tenant} "Shop B"`));
    printedNone(rotated, channelSecret, accessToken, reissued);
    assert.deepEqual((await (await store()).get(tenant))?.secret, { channelSecret, accessToken: reissued });

    // Removing revokes first: the secret is erased, the record stays for the held work to read.
    const removed = await admin(['tenant', 'remove', tenant, '--reason', 'client left']);
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, new RegExp(`^Removed ${tenant}: its credential is erased\\.`));
    const revoked = await (await store()).get(tenant);
    assert.equal(revoked?.secret, undefined, 'the secret is erased');
    assert.equal(revoked?.record.revokedReason, 'removed');
    const relisted = await admin(['tenant', 'list', '--json']);
    assert.equal(
      (JSON.parse(relisted.stdout) as { tenant: string; revokedReason?: string }[]).find(
        (t) => t.tenant === tenant,
      )?.revokedReason,
      'removed',
    );
    // Too soon to delete the record: its held work may still be reading it.
    const tooSoon = await admin(['tenant', 'remove', tenant]);
    assert.equal(tooSoon.code, 2);
    assert.match(
      tooSoon.stderr,
      new RegExp(
        `${tenant} is revoked \\(removed, .*\\) and its held work is still being told: its record can be deleted from `,
      ),
    );
    await (await database()).adminPool.query(
      "UPDATE tenant_credentials SET revoked_at = revoked_at - interval '11 minutes' WHERE tenant = $1",
      [tenant],
    );
    const deleted = await admin(['tenant', 'remove', tenant, '--reason', 'cleanup']);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.equal(deleted.stdout, `Deleted the record of ${tenant}.\n`);
    assert.equal(await (await store()).get(tenant), undefined);

    assert.deepEqual(
      (await auditRows(`tenant:${tenant}`)).map((a) => [a.actor, a.action, a.reason, a.result]),
      [
        [ADMIN, 'tenant add', 'new client', 'accepted: admin'],
        [ADMIN, 'tenant rotate', 'token reissued', 'accepted'],
        [ADMIN, 'tenant remove', 'client left', 'accepted: revoked'],
        [ADMIN, 'tenant remove', 'cleanup', 'accepted: deleted'],
      ],
    );
    const audit = JSON.stringify(await auditRows(`tenant:${tenant}`));
    for (const secret of [channelSecret, accessToken, reissued]) assert.ok(!audit.includes(secret));
  });

  it('reads a Slack team’s bot token from stdin as JSON (the real executable)', async () => {
    const tenant = slackTenant();
    const botToken = `xoxb-${secretValue('bot')}`;
    const result = await cliProcess(['tenant', 'add', tenant, '--secret-stdin', '--name', 'Acme'], {
      env: await adminEnv({ REPLYFLOW_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY }),
      input: `${JSON.stringify({ botToken })}\n`,
    });
    assert.equal(result.code, 0, result.stderr);
    printedNone(result, botToken);
    assert.deepEqual((await (await store()).get(tenant))?.secret, { botToken });
    assert.deepEqual(
      (await auditRows(`tenant:${tenant}`)).map((a) => [a.actor, a.action]),
      [[ADMIN, 'tenant add']],
    );
  });

  it('lists TENANTS_FILE’s entries as source file, without opening their secrets', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tenants-cli-'));
    const file = path.join(dir, 'tenants.yaml');
    const destination = `U${randomBytes(16).toString('hex')}`;
    writeFileSync(
      file,
      `line:\n  - destination: ${destination}\n    channelSecretEnv: NOT_SET_HERE\n    accessTokenEnv: NOT_SET_EITHER\n    name: From the file\n`,
    );
    const listed = await admin(['tenant', 'list', '--provider', 'line', '--json'], { TENANTS_FILE: file });
    assert.equal(listed.code, 0, listed.stderr);
    const entry = (JSON.parse(listed.stdout) as Record<string, unknown>[]).find(
      (t) => t.tenant === `line:${destination}`,
    );
    assert.deepEqual([entry?.source, entry?.details], ['file', { name: 'From the file' }]);

    // The same channel added to the store: stored, with word that the file's entry answers first.
    const env = { TENANTS_FILE: file, S: secretValue('s'), T: secretValue('t') };
    const added = await admin(
      ['tenant', 'add', `line:${destination}`, '--channel-secret-env', 'S', '--access-token-env', 'T'],
      env,
    );
    assert.equal(added.code, 0, added.stderr);
    assert.match(
      added.stderr,
      new RegExp(`TENANTS_FILE lists line:${destination} too, and its entry answers first`),
    );

    writeFileSync(file, 'line:\n  - destination: not-a-user-id\n');
    const broken = await admin(['tenant', 'list'], { TENANTS_FILE: file });
    assert.equal(broken.code, 2);
    assert.match(
      broken.stderr,
      /^replyflow: invalid tenants file .* \(TENANTS_FILE\): line\[0\]\.destination: expected/,
    );
  });

  it('refuses bad input in one line, exit 2, with nothing stored, nothing audited and no secret repeated', async () => {
    const tenant = lineTenant();
    const secret = secretValue('secret');
    const token = secretValue('token');
    const env = { S: secret, T: token };
    const cases: [string[], RegExp, Record<string, string>?, string?][] = [
      [
        ['tenant', 'add', tenant, '--channel-secret-env', 'S'],
        /needs --channel-secret-env <variable> and --access-token-env <variable>, or --secret-stdin \(a secret is never given on the command line\)/,
      ],
      [
        ['tenant', 'add', tenant, '--channel-secret-env', 'S', '--access-token-env', 'UNSET_TOKEN'],
        /--access-token-env: environment variable UNSET_TOKEN is not set/,
      ],
      [
        [
          'tenant',
          'add',
          tenant,
          '--channel-secret-env',
          'S',
          '--access-token-env',
          'T',
          '--bot-token-env',
          'T',
        ],
        /--bot-token-env is not for a line tenant/,
      ],
      [
        ['tenant', 'add', tenant, '--secret-stdin'],
        /stdin is not one line of JSON/,
        {},
        `not json ${secret}`,
      ],
      [
        ['tenant', 'add', tenant, '--secret-stdin'],
        /expected \{"channelSecret":"…","accessToken":"…"\}.*accessToken/,
        {},
        JSON.stringify({ channelSecret: secret }),
      ],
      [
        ['tenant', 'add', 'line:1657000000', '--channel-secret-env', 'S', '--access-token-env', 'T'],
        /not the numeric channel id/,
      ],
      [['tenant', 'add', 'github:42', '--channel-secret-env', 'S'], /needs no stored credential/],
      [['tenant', 'add', 'line:U1;DROP', '--channel-secret-env', 'S'], /expected line:<bot user id U…>/],
      [['tenant', 'rotate', tenant, '--access-token-env', 'T'], new RegExp(`no tenant ${tenant}`)],
      [['tenant', 'remove', tenant], new RegExp(`no tenant ${tenant}`)],
      [['tenant', 'list', '--provider', 'stripe'], /--provider expects one of slack, line, github/],
    ];
    for (const [argv, expected, extra, stdin] of cases) {
      const result = await admin(argv, { ...env, ...extra }, stdin);
      assert.equal(result.code, 2, `${argv.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, /^replyflow: [^\n]*\n$/, argv.join(' '));
      assert.match(result.stderr, expected, argv.join(' '));
      printedNone(result, secret, token);
    }
    // A secret on the command line is not an option at all.
    const inline = await admin(['tenant', 'add', tenant, '--channel-secret', secret]);
    assert.equal(inline.code, 2);
    printedNone(inline, secret);
    assert.equal(await (await store()).get(tenant), undefined);
    assert.deepEqual(await auditRows(`tenant:${tenant}`), []);
  });

  it('needs the payload key to seal a secret: one line naming REPLYFLOW_ENCRYPTION_KEY', async () => {
    const tenant = lineTenant();
    const result = await cli(
      ['tenant', 'add', tenant, '--channel-secret-env', 'S', '--access-token-env', 'T'],
      { env: await adminEnv({ S: secretValue('s'), T: secretValue('t') }) },
    );
    assert.equal(result.code, 2);
    assert.match(
      result.stderr,
      /^replyflow: tenant credentials are sealed under the payload key receivers and workers run with: REPLYFLOW_ENCRYPTION_KEY is unset and [^\n]+ does not exist[^\n]*\n$/,
    );
    assert.equal(await (await store()).get(tenant), undefined);
    assert.deepEqual(await auditRows(`tenant:${tenant}`), []);
    // Listing shows no secret, so it needs no key.
    assert.equal((await cli(['tenant', 'list'], { env: await adminEnv() })).code, 0);
  });

  it('refuses every tenant command without the admin credential', async () => {
    const tenant = lineTenant();
    for (const argv of [
      ['tenant', 'add', tenant, '--channel-secret-env', 'S', '--access-token-env', 'T'],
      ['tenant', 'list'],
      ['tenant', 'rotate', tenant, '--access-token-env', 'T'],
      ['tenant', 'remove', tenant],
    ]) {
      const result = await cli(argv, {
        env: { REPLYFLOW_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, S: 's', T: 't' },
      });
      assert.equal(result.code, 2, argv.join(' '));
      assert.match(
        result.stderr,
        /^replyflow: this command needs the admin credential: set REPLYFLOW_ADMIN_DATABASE_URL/,
      );
    }
    assert.equal(await (await store()).get(tenant), undefined);
  });
});
