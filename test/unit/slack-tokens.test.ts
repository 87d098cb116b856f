// Which token a Slack call uses (src/targets/slack-tokens.ts), against an in-memory tenant_credentials
// with its version check: installed, shortcut, not installed, revoked; and token rotation when two
// workers refresh the same team at once (one refresh per process, the loser uses the winner's token).
import assert from 'node:assert/strict';
import type { TenantCredential } from '../../src/db/tenant-credentials';
import { createTargets } from '../../src/targets';
import { TargetError } from '../../src/targets/errors';
import { slackTokens } from '../../src/targets/slack-tokens';
import { createTenantDirectory, fileTenantDirectory } from '../../src/tenants/directory';
import { SlackOAuthError } from '../../src/tenants/errors';
import { testConfig } from '../support/system';

const NOW = Date.UTC(2026, 11, 1, 12);
const TENANT = 'slack:T0ROTATE';

/** One row of tenant_credentials, with replaceSecret's version check. */
function table(secret: Record<string, string> | undefined, expiresInMs?: number) {
  let version = 1;
  let current = secret;
  let expiresAt = expiresInMs === undefined ? undefined : new Date(NOW + expiresInMs);
  const credential = (): TenantCredential => ({
    record: {
      tenant: TENANT,
      provider: 'slack',
      source: 'oauth',
      details: {},
      version,
      createdAt: new Date(NOW),
      updatedAt: new Date(NOW),
      ...(expiresAt ? { expiresAt } : {}),
      ...(current ? {} : { revokedAt: new Date(NOW), revokedReason: 'app_uninstalled' }),
    },
    ...(current ? { secret: { ...current } } : {}),
  });
  return {
    tenants: {
      credential: async (tenant: string) => {
        return tenant === TENANT ? credential() : undefined;
      },
      forget() {},
    },
    async replaceSecret(_tenant: string, at: number, next: Record<string, string>, until?: Date) {
      if (at !== version || !current) return undefined;
      version += 1;
      current = next;
      expiresAt = until;
      return credential().record;
    },
  };
}

/** Slack's refresh: each refresh token works once and yields the next pair. */
function slackRefresh() {
  let issued = 0;
  const valid = new Set(['xoxe-1']);
  const calls: string[] = [];
  return {
    calls,
    async refresh(refreshToken: string) {
      calls.push(refreshToken);
      await new Promise((resolve) => setImmediate(resolve));
      if (!valid.delete(refreshToken)) throw new SlackOAuthError('refused', true, 'invalid_refresh_token');
      issued += 1;
      valid.add(`xoxe-${issued + 1}`);
      return {
        botToken: `xoxb-${issued + 1}`,
        refreshToken: `xoxe-${issued + 1}`,
        expiresAt: new Date(NOW + 12 * 3_600_000),
      };
    },
  };
}

const permanent = (pattern: RegExp) => (err: unknown) =>
  err instanceof TargetError && err.errorClass === 'permanent' && pattern.test(err.details.fix ?? '');

describe('Slack tokens per team (slackTokens)', () => {
  it("uses an installed team's token, and SLACK_BOT_TOKEN for a team not installed or no team", async () => {
    const rows = table({ botToken: 'xoxb-installed' });
    const tokens = slackTokens({ fallbackToken: 'xoxb-shortcut', tenants: rows.tenants, now: () => NOW });
    assert.equal((await tokens.forTenant(TENANT)).token, 'xoxb-installed');
    assert.equal((await tokens.forTenant('slack:T0OTHER')).token, 'xoxb-shortcut');
    assert.equal((await tokens.forTenant(undefined)).token, 'xoxb-shortcut');
  });

  it('refuses a team not installed without SLACK_BOT_TOKEN, and a revoked team even with it', async () => {
    const notInstalled = slackTokens({ tenants: table(undefined).tenants, now: () => NOW });
    await assert.rejects(notInstalled.forTenant('slack:T0OTHER'), permanent(/\/slack\/install/));
    const revoked = slackTokens({ fallbackToken: 'xoxb-shortcut', tenants: table(undefined).tenants });
    await assert.rejects(revoked.forTenant(TENANT), permanent(/uninstalled, or its tokens revoked/));
    await assert.rejects(revoked.forTenant('line:U0123'), permanent(/destination\.tenant/));
  });

  it('refreshes a token near its expiry once for concurrent calls, and stores it over the version it read', async () => {
    const rows = table({ botToken: 'xoxb-1', refreshToken: 'xoxe-1' }, 60_000);
    const slack = slackRefresh();
    const tokens = slackTokens({
      tenants: rows.tenants,
      replaceSecret: rows.replaceSecret,
      ...slack,
      now: () => NOW,
    });
    const chosen = await Promise.all([
      tokens.forTenant(TENANT),
      tokens.forTenant(TENANT),
      tokens.forTenant(TENANT),
    ]);
    assert.deepEqual(
      chosen.map((c) => c.token),
      ['xoxb-2', 'xoxb-2', 'xoxb-2'],
    );
    assert.deepEqual(slack.calls, ['xoxe-1'], 'one refresh');
    const stored = await rows.tenants.credential(TENANT);
    assert.equal(stored?.record.version, 2);
    assert.deepEqual(stored?.secret, { botToken: 'xoxb-2', refreshToken: 'xoxe-2' });
    assert.equal((await tokens.forTenant(TENANT)).token, 'xoxb-2', 'the new token lasts: no second refresh');
    assert.equal(slack.calls.length, 1);
  });

  it("uses the refreshed token next, through the directory's cache (whose quarter-second reads are not refetched)", async () => {
    const rows = table({ botToken: 'xoxb-1', refreshToken: 'xoxe-1' }, 60_000);
    // The clock stands still: every read is within the directory's FRESH_MIN_MS of the last.
    const tenants = createTenantDirectory({ get: rows.tenants.credential }, { now: () => NOW });
    const slack = slackRefresh();
    const tokens = slackTokens({ tenants, replaceSecret: rows.replaceSecret, ...slack, now: () => NOW });
    assert.equal((await tokens.forTenant(TENANT)).token, 'xoxb-2');
    assert.equal((await tokens.forTenant(TENANT)).token, 'xoxb-2');
    assert.deepEqual(slack.calls, ['xoxe-1'], 'one refresh');
  });

  it('uses the token another worker stored when that worker refreshed first', async () => {
    const rows = table({ botToken: 'xoxb-1', refreshToken: 'xoxe-1' }, 60_000);
    const slack = slackRefresh();
    const deps = { tenants: rows.tenants, replaceSecret: rows.replaceSecret, ...slack, now: () => NOW };
    const [first, second] = [slackTokens(deps), slackTokens(deps)];
    const [a, b] = await Promise.all([first.forTenant(TENANT), second.forTenant(TENANT)]);
    assert.equal(a.token, 'xoxb-2');
    assert.equal(b.token, 'xoxb-2', "the loser's refresh token was spent: it reads the winner's");
    assert.equal((await rows.tenants.credential(TENANT))?.record.version, 2, 'stored once');
  });

  it('without the client credentials, fails an expired rotating token with the setting to fix', async () => {
    const rows = table({ botToken: 'xoxb-1', refreshToken: 'xoxe-1' }, -1000);
    const tokens = slackTokens({ tenants: rows.tenants, replaceSecret: rows.replaceSecret, now: () => NOW });
    await assert.rejects(tokens.forTenant(TENANT), permanent(/SLACK_CLIENT_ID and SLACK_CLIENT_SECRET/));
  });

  it('keeps using a token near its expiry while it cannot be refreshed (no client credentials, Slack unreachable)', async () => {
    const rows = table({ botToken: 'xoxb-1', refreshToken: 'xoxe-1' }, 60_000);
    const without = slackTokens({ tenants: rows.tenants, replaceSecret: rows.replaceSecret, now: () => NOW });
    assert.equal((await without.forTenant(TENANT)).token, 'xoxb-1');
    const unreachable = slackTokens({
      tenants: rows.tenants,
      replaceSecret: rows.replaceSecret,
      refresh: async () => {
        throw new SlackOAuthError('unreachable', false);
      },
      now: () => NOW,
    });
    assert.equal((await unreachable.forTenant(TENANT)).token, 'xoxb-1');
  });

  it('counts a failure before the post (Slack unreachable, the database down) as retryable', async () => {
    const rows = table({ botToken: 'xoxb-1', refreshToken: 'xoxe-1' }, -1000);
    const unreachable = slackTokens({
      tenants: rows.tenants,
      replaceSecret: rows.replaceSecret,
      refresh: async () => {
        throw new SlackOAuthError('unreachable', false);
      },
      now: () => NOW,
    });
    const retryable = (err: unknown) => err instanceof TargetError && err.errorClass === 'retryable';
    await assert.rejects(unreachable.forTenant(TENANT), retryable);
    const down = slackTokens({
      tenants: {
        credential: async () => {
          throw new Error('connect ECONNREFUSED');
        },
        forget() {},
      },
      now: () => NOW,
    });
    await assert.rejects(down.forTenant(TENANT), retryable);
    const storeDown = slackTokens({
      tenants: rows.tenants,
      replaceSecret: async () => {
        throw new Error('connect ECONNREFUSED');
      },
      ...slackRefresh(),
      now: () => NOW,
    });
    await assert.rejects(storeDown.forTenant(TENANT), retryable);
  });

  it('registers the Slack target with SLACK_BOT_TOKEN, the client credentials, or Slack teams in TENANTS_FILE, and not without', () => {
    const listed = (tenant: string) =>
      fileTenantDirectory({
        file: 'tenants.yaml',
        entries: new Map([
          [
            tenant,
            {
              record: {
                tenant,
                provider: tenant.split(':')[0]!,
                source: 'file',
                details: {},
                version: 1,
                createdAt: new Date(NOW),
                updatedAt: new Date(NOW),
              },
              secret: { botToken: 'xoxb-file' },
            },
          ],
        ]),
      });
    const has = (env: Record<string, string>, tenants = listed('line:U0123')) =>
      createTargets(testConfig({ SANDBOX_ENABLED: 'false', ...env }), {}, { tenants }).has('slack');
    assert.equal(has({}), false);
    assert.equal(has({ SLACK_BOT_TOKEN: 'xoxb-shortcut' }), true);
    assert.equal(has({ SLACK_CLIENT_ID: '1.2', SLACK_CLIENT_SECRET: 's' }), true);
    assert.equal(has({}, listed('slack:T0FILE')), true);
  });
});
