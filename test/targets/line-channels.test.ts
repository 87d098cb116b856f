// The LINE target with several channels, against the fake Messaging API over real HTTP: the step's
// tenant chooses the access token (the shortcut answers destinations without a channel), a destination
// without a channel or shortcut is a permanent error whose fix names `replyflow tenant add`, a revoked
// channel sends nothing, and a stored token LINE refuses after a rotation is read again, fresh, once.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { TenantCredential } from '../../src/db/tenant-credentials';
import type { StepPlan } from '../../src/model';
import { TargetError } from '../../src/targets/errors';
import { lineTarget } from '../../src/targets/line';
import { createTenantDirectory, FRESH_MIN_MS } from '../../src/tenants/directory';
import { lineChannelsOf } from '../../src/tenants/line-channels';
import { FakeLine } from '../support/fakes/line';
import { uniqueId } from '../support/system';

const tenantOfNew = () => `line:U${randomBytes(16).toString('hex')}`;

function credential(tenant: string, accessToken?: string): TenantCredential {
  const at = new Date();
  return {
    record: {
      tenant,
      provider: 'line',
      source: 'admin',
      details: {},
      version: 1,
      createdAt: at,
      updatedAt: at,
      ...(accessToken ? {} : { revokedAt: at, revokedReason: 'contract ended' }),
    },
    ...(accessToken ? { secret: { channelSecret: 'unused-here', accessToken } } : {}),
  };
}

describe('LINE target: the access token of the step’s channel (fake Messaging API)', function () {
  this.timeout(30_000);
  let line: FakeLine;
  let now = 0;
  const rows = new Map<string, TenantCredential>();
  let reads = 0;
  const directory = createTenantDirectory(
    {
      async get(tenant) {
        reads += 1;
        return rows.get(tenant);
      },
    },
    { now: () => now },
  );
  const channels = lineChannelsOf({ LINE_CHANNELS: 'tenants' }, directory);

  before(async () => {
    line = await new FakeLine('shortcut-token').start();
  });
  after(async () => {
    await line?.stop();
  });

  /** A push (no reply token) to a new user of `tenant`'s channel. */
  const push = (target: ReturnType<typeof lineTarget>, tenant: string | undefined) => {
    const to = uniqueId('U');
    const step: StepPlan = {
      name: 'answer',
      target: 'line',
      destination: { to, ...(tenant ? { tenant } : {}) },
      content: { kind: 'reply' },
    };
    const sent = target.send({
      effectId: uniqueId('eff-'),
      step,
      body: { text: 'We are open 9:00-18:00.' },
      signal: new AbortController().signal,
      attempt: 1,
    });
    return { to, sent };
  };

  it('pushes with the channel’s own token, and with the shortcut’s for a destination without a channel', async () => {
    const tenant = tenantOfNew();
    rows.set(tenant, credential(tenant, 'token-of-b'));
    line.allowToken('token-of-b');
    const target = lineTarget({ channelAccessToken: 'shortcut-token', channels, apiUrl: line.url });
    const own = push(target, tenant);
    await own.sent;
    const other = push(target, tenantOfNew());
    await other.sent;
    assert.deepEqual(
      [line.deliveredTo(own.to)[0]?.accessToken, line.deliveredTo(other.to)[0]?.accessToken],
      ['token-of-b', 'shortcut-token'],
    );
  });

  it('fails a destination without a channel or a shortcut permanently, naming `replyflow tenant add`, and sends nothing', async () => {
    const tenant = tenantOfNew();
    const target = lineTarget({ channels, apiUrl: line.url });
    const { to, sent } = push(target, tenant);
    await assert.rejects(
      sent,
      (err: unknown) =>
        err instanceof TargetError &&
        err.errorClass === 'permanent' &&
        err.details.fix?.startsWith(
          `add the channel (\`replyflow tenant add ${tenant} --channel-secret-env`,
        ) === true,
    );
    assert.equal(line.deliveredTo(to).length, 0);
  });

  it('sends nothing for a revoked channel, even with a shortcut', async () => {
    const tenant = tenantOfNew();
    rows.set(tenant, credential(tenant));
    const target = lineTarget({ channelAccessToken: 'shortcut-token', channels, apiUrl: line.url });
    const { to, sent } = push(target, tenant);
    await assert.rejects(
      sent,
      (err: unknown) =>
        err instanceof TargetError &&
        err.errorClass === 'permanent' &&
        /is revoked \(contract ended\)/.test(err.message),
    );
    assert.equal(line.deliveredTo(to).length, 0);
  });

  it('reads a refused token again, fresh, and sends once with the rotated one', async () => {
    const tenant = tenantOfNew();
    rows.set(tenant, credential(tenant, 'old-token'));
    line.allowToken('old-token');
    const target = lineTarget({ channels, apiUrl: line.url });
    await push(target, tenant).sent;
    // Reissued: LINE refuses the old token, the store holds the new one, the cache still the old.
    rows.set(tenant, credential(tenant, 'new-token'));
    line.refuseToken('old-token').allowToken('new-token');
    now += FRESH_MIN_MS;
    const before = reads;
    const { to, sent } = push(target, tenant);
    await sent;
    assert.equal(reads, before + 1, 'one fresh read');
    assert.deepEqual(
      line.deliveredTo(to).map((d) => d.accessToken),
      ['new-token'],
    );
    assert.equal(
      line.pushes().filter((p) => p.body.to === to).length,
      2,
      'the refused request, then the sent one',
    );
  });

  it('names the channel’s fix when LINE refuses its token and the store has no other', async () => {
    const tenant = tenantOfNew();
    rows.set(tenant, credential(tenant, 'never-valid'));
    const target = lineTarget({ channels, apiUrl: line.url });
    await assert.rejects(
      push(target, tenant).sent,
      (err: unknown) =>
        err instanceof TargetError &&
        err.details.fix === `check the access token of ${tenant} (\`replyflow tenant rotate ${tenant}\`)`,
    );
  });
});
