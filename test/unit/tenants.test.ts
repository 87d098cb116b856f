// Several LINE channels and Slack teams without a database: TENANTS_FILE checked entry by entry (each
// problem with its path, never a secret), the directory (the file first, the store through a cache
// that picks up a new tenant within a second, `fresh` for a rotated secret but not once per forged
// request), and the LINE provider choosing the secret by the body's destination.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import type { TenantCredential } from '../../src/db/tenant-credentials';
import { ConfigError } from '../../src/errors';
import { createProviders } from '../../src/providers';
import { ProviderUnavailableError, WebhookVerificationError } from '../../src/providers/errors';
import { lineProvider } from '../../src/providers/line';
import { createTargets } from '../../src/targets';
import { createTenantDirectory, FRESH_MIN_MS, TENANT_CACHE_MS } from '../../src/tenants/directory';
import { TenantsFileError } from '../../src/tenants/errors';
import { lineChannelsOf } from '../../src/tenants/line-channels';
import {
  checkTenantsText,
  loadTenantsFile,
  NO_TENANTS_FILE,
  type TenantsFile,
} from '../../src/tenants/tenants-file';
import { signLineRequest } from '../support/signers';
import { eventsOf, requestContext } from './providers/context';

const A = `U${'a'.repeat(32)}`;
const B = `U${'b'.repeat(32)}`;
const C = `U${'c'.repeat(32)}`;
const ENV = { SECRET_A: 'secret-of-a', TOKEN_A: 'token-of-a', SLACK_ACME: 'xoxb-acme' };

const FILE = `
line:
  - destination: ${A}
    channelSecretEnv: SECRET_A
    accessTokenEnv: TOKEN_A
    name: Shop A
slack:
  - team: T0ACME
    botTokenEnv: SLACK_ACME
`;

function stored(tenant: string, secret?: Record<string, string>): TenantCredential {
  const at = new Date();
  return {
    record: {
      tenant,
      provider: tenant.split(':')[0]!,
      source: 'admin',
      details: {},
      version: 1,
      createdAt: at,
      updatedAt: at,
      ...(secret ? {} : { revokedAt: at, revokedReason: 'left the agency' }),
    },
    ...(secret ? { secret } : {}),
  };
}

/** A tenant store in memory that counts its reads, and fails them on request. */
function fakeStore() {
  const rows = new Map<string, TenantCredential>();
  const store = {
    reads: 0,
    down: false,
    rows,
    async get(tenant: string) {
      store.reads += 1;
      if (store.down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
      return rows.get(tenant);
    },
  };
  return store;
}

describe('tenants: TENANTS_FILE, the directory, LINE channels by destination', () => {
  describe('TENANTS_FILE', () => {
    it('reads LINE channels and Slack teams, each secret from the variable it names, as source file', () => {
      const { entries, problems } = checkTenantsText(FILE, ENV);
      assert.deepEqual(problems, []);
      assert.deepEqual([...entries!.keys()], [`line:${A}`, 'slack:T0ACME']);
      const line = entries!.get(`line:${A}`)!;
      assert.deepEqual(line.secret, { channelSecret: 'secret-of-a', accessToken: 'token-of-a' });
      assert.deepEqual(
        [line.record.source, line.record.provider, line.record.details],
        ['file', 'line', { name: 'Shop A' }],
      );
      assert.deepEqual(entries!.get('slack:T0ACME')!.secret, { botToken: 'xoxb-acme' });
    });

    it('lists every problem with the entry’s path, and never the value of a secret', () => {
      const text = `
line:
  - destination: ${A}
    channelSecret: an-inline-secret
    accessTokenEnv: TOKEN_A
  - destination: "1657000000"
    channelSecretEnv: SECRET_A
    accessTokenEnv: TOKEN_A
  - destination: ${B}
    channelSecretEnv: UNSET_SECRET
    accessTokenEnv: TOKEN_A
  - destination: ${B}
    channelSecretEnv: SECRET_A
    accessTokenEnv: TOKEN_A
slack:
  - team: T0ACME
    botTokenEnv: SLACK_ACME
    colour: blue
github: []
`;
      const { entries, problems } = checkTenantsText(text, ENV);
      assert.equal(entries, undefined, 'a file with a problem gives no entries');
      assert.deepEqual(
        problems.map((p) => p.split(':')[0]),
        [
          '(file)',
          'line[0].channelSecret',
          'line[1].destination',
          'line[2].channelSecretEnv',
          'line[3]',
          'slack[0]',
        ],
      );
      assert.ok(
        problems.some((p) => p.startsWith('(file): Unrecognized key: "github"')),
        problems.join('\n'),
      );
      assert.ok(
        problems.includes(
          'line[0].channelSecret: a secret is never written in the file: name its environment variable with channelSecretEnv',
        ),
      );
      assert.ok(problems.some((p) => p.startsWith("line[1].destination: expected the bot's user id")));
      assert.ok(problems.includes('line[2].channelSecretEnv: environment variable UNSET_SECRET is not set'));
      assert.ok(problems.includes(`line[3]: line:${B} is listed twice`));
      assert.ok(problems.some((p) => p.startsWith('slack[0]: Unrecognized key: "colour"')));
      assert.ok(!problems.join(' ').includes('an-inline-secret'), 'the inline secret is not repeated');
    });

    it('refuses to start with a file it cannot use: one error naming the file and TENANTS_FILE', () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'tenants-'));
      const file = path.join(dir, 'tenants.yaml');
      writeFileSync(file, FILE);
      assert.throws(
        () => loadTenantsFile(file, {}),
        (err: unknown) =>
          err instanceof TenantsFileError &&
          err.message ===
            `invalid tenants file ${file} (TENANTS_FILE): line[0].channelSecretEnv: environment variable SECRET_A is not set; line[0].accessTokenEnv: environment variable TOKEN_A is not set; slack[0].botTokenEnv: environment variable SLACK_ACME is not set`,
      );
      assert.equal(loadTenantsFile(file, ENV).entries.size, 2);
      assert.throws(
        () => loadTenantsFile(path.join(dir, 'missing.yaml'), ENV),
        /cannot read the file \(ENOENT\)/,
      );
    });
  });

  describe('directory', () => {
    const file = (): TenantsFile => ({ entries: checkTenantsText(FILE, ENV).entries! });

    it('answers a file entry first, without reading the store', async () => {
      const store = fakeStore();
      store.rows.set(`line:${A}`, stored(`line:${A}`, { channelSecret: 'stored', accessToken: 'stored' }));
      const directory = createTenantDirectory(store, { file: file() });
      assert.equal((await directory.credential(`line:${A}`))?.record.source, 'file');
      assert.equal(store.reads, 0);
    });

    it('finds a tenant added after the first miss within a second, and keeps a found one for the cache time', async () => {
      let now = 0;
      const store = fakeStore();
      const directory = createTenantDirectory(store, { now: () => now });
      assert.equal(await directory.credential(`line:${B}`), undefined);
      store.rows.set(`line:${B}`, stored(`line:${B}`, { channelSecret: 's', accessToken: 't' }));
      now = 500;
      assert.equal(await directory.credential(`line:${B}`), undefined, 'a miss is kept for a moment');
      now = 1001;
      assert.equal((await directory.credential(`line:${B}`))?.secret?.accessToken, 't');
      const reads = store.reads;
      now = 1001 + TENANT_CACHE_MS - 1;
      await directory.credential(`line:${B}`);
      assert.equal(store.reads, reads, 'a found tenant is not read again within the cache time');
      now = 1001 + TENANT_CACHE_MS;
      await directory.credential(`line:${B}`);
      assert.equal(store.reads, reads + 1);
    });

    it('reads again when asked fresh, but not more often than every FRESH_MIN_MS', async () => {
      let now = 0;
      const store = fakeStore();
      store.rows.set(`line:${B}`, stored(`line:${B}`, { channelSecret: 's', accessToken: 't' }));
      const directory = createTenantDirectory(store, { now: () => now });
      await directory.credential(`line:${B}`);
      now = FRESH_MIN_MS - 1;
      for (let i = 0; i < 5; i++) await directory.credential(`line:${B}`, { fresh: true });
      assert.equal(store.reads, 1, 'forged requests do not each become a query');
      now = FRESH_MIN_MS;
      await directory.credential(`line:${B}`, { fresh: true });
      assert.equal(store.reads, 2);
    });

    it('reads again when asked latest, even right after a read: a reinstall committed since counts', async () => {
      const now = 0;
      const store = fakeStore();
      store.rows.set(`slack:${B}`, stored(`slack:${B}`));
      const directory = createTenantDirectory(store, { now: () => now });
      assert.equal((await directory.credential(`slack:${B}`, { latest: true }))?.secret, undefined);
      store.rows.set(`slack:${B}`, stored(`slack:${B}`, { botToken: 'xoxb-reinstalled' }));
      assert.equal(
        (await directory.credential(`slack:${B}`, { fresh: true }))?.secret,
        undefined,
        'fresh is answered by the read a moment ago',
      );
      const latest = await directory.credential(`slack:${B}`, { latest: true });
      assert.equal(latest?.secret?.botToken, 'xoxb-reinstalled');
      assert.equal(store.reads, 2);
      assert.equal(
        (await directory.credential(`slack:${B}`))?.secret?.botToken,
        'xoxb-reinstalled',
        'and cached',
      );
    });
  });

  describe('LINE provider, channels by destination', () => {
    const body = (destination: string) =>
      JSON.stringify({
        destination,
        events: [
          {
            type: 'message',
            mode: 'active',
            timestamp: 1_700_000_000_000,
            source: { type: 'user', userId: 'Uuser1' },
            webhookEventId: '01HZZZZZZZZZZZZZZZZZZZZCH1',
            replyToken: 'reply-token-1',
            message: { id: '1', type: 'text', text: 'hello' },
          },
        ],
      });
    const request = (destination: string, secret: string) => {
      const text = body(destination);
      return requestContext(text, signLineRequest(secret, text));
    };
    let now = 0;
    const setup = (options: { stored?: boolean; shortcut?: string } = {}) => {
      const store = fakeStore();
      store.rows.set(
        `line:${B}`,
        stored(`line:${B}`, { channelSecret: 'secret-of-b', accessToken: 'token-of-b' }),
      );
      store.rows.set(`line:${C}`, stored(`line:${C}`));
      const directory = createTenantDirectory(store, {
        now: () => now,
        file: { entries: checkTenantsText(FILE, ENV).entries! },
      });
      const channels = lineChannelsOf(
        { LINE_CHANNELS: options.stored === false ? undefined : 'tenants' },
        directory,
      );
      return { store, provider: lineProvider(options.shortcut, channels) };
    };
    const refused = async (verify: unknown, reason: RegExp) =>
      assert.rejects(
        Promise.resolve(verify),
        (err: unknown) => err instanceof WebhookVerificationError && reason.test(err.message),
      );

    it('verifies each destination with its own channel’s secret, and the event names the channel', async () => {
      const { provider } = setup();
      await provider.verify(request(A, 'secret-of-a'));
      await provider.verify(request(B, 'secret-of-b'));
      const [event] = eventsOf(provider.parse(request(B, 'secret-of-b')));
      assert.equal(event!.tenant, `line:${B}`);
      assert.equal(event!.replyTo!.destination.tenant, `line:${B}`);
    });

    it('refuses a request signed with another channel’s secret, or with the shortcut’s', async () => {
      const { provider } = setup({ shortcut: 'the-shortcut-secret' });
      await refused(provider.verify(request(B, 'secret-of-a')), new RegExp(`channel secret of line:${B}`));
      await refused(provider.verify(request(A, 'the-shortcut-secret')), /TENANTS_FILE/);
    });

    it('refuses an unknown destination without LINE_CHANNEL_SECRET, and verifies it with the shortcut when set', async () => {
      const unknown = `U${'d'.repeat(32)}`;
      await refused(
        setup().provider.verify(request(unknown, 'anything')),
        new RegExp(`no LINE channel for destination line:${unknown} and no LINE_CHANNEL_SECRET`),
      );
      await setup({ shortcut: 'the-shortcut-secret' }).provider.verify(
        request(unknown, 'the-shortcut-secret'),
      );
      await refused(
        setup().provider.verify(requestContext('not json', { 'x-line-signature': 'x' })),
        /names no destination/,
      );
    });

    it('refuses a revoked channel, even with the shortcut set', async () => {
      await refused(
        setup({ shortcut: 'the-shortcut-secret' }).provider.verify(request(C, 'the-shortcut-secret')),
        /^the LINE channel line:Uc{32} is revoked, and LINE_CHANNEL_SECRET does not stand in for it$/,
      );
    });

    it('asks the store once more for a secret that fails: a rotated secret verifies at once', async () => {
      const { store, provider } = setup();
      await provider.verify(request(B, 'secret-of-b'));
      store.rows.set(
        `line:${B}`,
        stored(`line:${B}`, { channelSecret: 'rotated-b', accessToken: 'token-of-b' }),
      );
      const before = store.reads;
      now += FRESH_MIN_MS;
      await provider.verify(request(B, 'rotated-b'));
      assert.equal(store.reads, before + 1, 'one fresh read');
    });

    it('uses only TENANTS_FILE’s channels without LINE_CHANNELS=tenants: the store is never read', async () => {
      const { store, provider } = setup({ stored: false, shortcut: 'the-shortcut-secret' });
      await provider.verify(request(A, 'secret-of-a'));
      await provider.verify(request(B, 'the-shortcut-secret'));
      assert.equal(store.reads, 0);
    });

    it('is unavailable (503, nothing recorded) while the store cannot be read', async () => {
      const { store, provider } = setup();
      store.down = true;
      await assert.rejects(
        Promise.resolve(provider.verify(request(B, 'secret-of-b'))),
        ProviderUnavailableError,
      );
    });

    it('turns LINE on (provider and target) with the shortcut, TENANTS_FILE channels or LINE_CHANNELS=tenants, and only then', () => {
      const withFile = createTenantDirectory(fakeStore(), {
        file: { entries: checkTenantsText(FILE, ENV).entries! },
      });
      const slackOnly = createTenantDirectory(fakeStore(), {
        file: {
          entries: checkTenantsText('slack:\n  - team: T0ACME\n    botTokenEnv: SLACK_ACME\n', ENV).entries!,
        },
      });
      const none = createTenantDirectory(fakeStore());
      const lineOn = (env: Record<string, string>, tenants: ReturnType<typeof createTenantDirectory>) => {
        const config = loadConfig({ SANDBOX_ENABLED: 'false', ...env });
        return [
          createProviders(config, { githubBodies: { admit: async () => true }, tenants }).some(
            (p) => p.name === 'line',
          ),
          createTargets(config, {}, { tenants }).has('line'),
        ];
      };
      assert.deepEqual(lineOn({}, none), [false, false], 'no LINE configured: 404, as before');
      assert.deepEqual(lineOn({}, slackOnly), [false, false], 'a file without LINE channels');
      assert.deepEqual(lineOn({}, withFile), [true, true]);
      assert.deepEqual(lineOn({ LINE_CHANNELS: 'tenants' }, none), [true, true]);
      assert.deepEqual(lineOn({ LINE_CHANNEL_SECRET: 's', LINE_CHANNEL_ACCESS_TOKEN: 't' }, none), [
        true,
        true,
      ]);
    });

    it('refuses a LINE_CHANNELS other than tenants, naming the setting', () => {
      assert.throws(
        () => loadConfig({ LINE_CHANNELS: 'database' }),
        (err: unknown) =>
          err instanceof ConfigError &&
          err.message ===
            'invalid configuration: LINE_CHANNELS: expected tenants (channels from `replyflow tenant add`), or unset',
      );
    });

    it('has nothing to look up without TENANTS_FILE channels or LINE_CHANNELS=tenants', () => {
      const directory = createTenantDirectory(fakeStore(), { file: NO_TENANTS_FILE });
      assert.equal(lineChannelsOf({ LINE_CHANNELS: undefined }, directory), undefined);
    });
  });
});
