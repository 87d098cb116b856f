// One replyflow for many Slack workspaces (DESIGN.md §2, "Many workspaces"): teams installed through
// the OAuth v2 flow against a fake Slack (authorize page, oauth.v2.access, token rotation), signed
// event_callback envelopes through the real receiver, the event workflow on the dev server and
// PostgreSQL. Each reply must carry its own team's token (the fake records every Authorization
// header); a forged, replayed or expired state installs nothing; an uninstalled team's work stops
// with nothing posted while the other teams are still answered; a rotating token is refreshed once.
import assert from 'node:assert/strict';
import type { AppMentionEvent } from '@slack/types';
import type { Config } from '../../src/config';
import { SLACK_EVENTS_ACTOR, SLACK_OAUTH_ACTOR } from '../../src/receiver/slack-install';
import { ANNOUNCE_EVERY_MS } from '../../src/tenants/revocation-announcer';
import { signInstallState } from '../../src/tenants/slack-oauth';
import { statusQuery, tenantRevokedSignal, tenantRevokedWorkflowId } from '../../workflows/messages';
import { REVOCATION_ACTION, REVOCATION_ACTOR } from '../../workflows/operator-desk';
import type { EventResult } from '../../workflows/run-view';
import { adminEnv, cli } from '../cli/harness';
import { eventually } from '../support/eventually';
import { FakeSlack } from '../support/fakes/slack';
import {
  capturedLogger,
  startTestReceiver,
  startTestSystem,
  type TestSystem,
  unreachablePool,
} from '../support/receiver';
import { database, devServer } from '../support/servers';
import { signSlackRequest } from '../support/signers';
import { testConfig, uniqueId } from '../support/system';
import { auditRows, effectRows, resultWithin, waitForState } from '../support/workflows';

const SIGNING_SECRET = 'slack-installations-test-signing-secret';

/** A Slack id (upper-case letters and digits), new for each use. */
const slackId = (prefix: string) => uniqueId(prefix).toUpperCase();

let seq = 0;
function nextTs(): string {
  seq += 1;
  return `${Math.floor(Date.now() / 1000)}.${String(seq).padStart(6, '0')}`;
}

/** The row tenant_credentials holds for a team, as the database shows it. */
async function tenantRow(team: string) {
  const { pool } = await database();
  const { rows } = await pool.query(
    'SELECT tenant, source, details, secret, expires_at, version, revoked_at, revoked_reason FROM tenant_credentials WHERE tenant = $1',
    [`slack:${team}`],
  );
  return rows[0] as
    | {
        tenant: string;
        source: string;
        details: Record<string, unknown>;
        secret: Buffer | null;
        expires_at: Date | null;
        version: number;
        revoked_at: Date | null;
        revoked_reason: string | null;
      }
    | undefined;
}

describe('Slack installations: many workspaces through the OAuth flow (receiver, worker, fake Slack)', function () {
  this.timeout(180_000);
  let slack: FakeSlack;
  let config: Config;
  let system: TestSystem | undefined;
  /** The receiver's log, at its most verbose: what it must never say is checked at the end. */
  const log = capturedLogger();

  before(async () => {
    slack = await new FakeSlack().start();
    // No SLACK_BOT_TOKEN: every team answers with its own installation, or not at all.
    config = testConfig({
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_CLIENT_ID: slack.clientId,
      SLACK_CLIENT_SECRET: slack.clientSecret,
      SLACK_API_URL: `${slack.url}/api/`,
    });
    system = await startTestSystem({ config, logger: log.logger });
    // The app's Redirect URL, as its OAuth settings at Slack would name it.
    slack.redirectUri = `${system.receiver.url}/slack/oauth_redirect`;
  });
  after(async () => {
    await system?.stop();
    await slack?.stop();
  });

  /** A workspace the fake Slack knows, new for each test. */
  const newTeam = (options: { expiresIn?: number } = {}) => {
    const id = slackId('T');
    slack.team({ id, name: `Team ${id}`, ...options });
    return id;
  };

  /** /slack/install → Slack's authorize page (the installer picks `team`) → where Slack sends them back. */
  async function callbackFor(team: string, extra: Record<string, string> = {}): Promise<URL> {
    const start = await fetch(`${system!.receiver.url}/slack/install`, { redirect: 'manual' });
    assert.equal(start.status, 302);
    const authorize = new URL(start.headers.get('location')!);
    assert.equal(`${authorize.origin}${authorize.pathname}`, `${slack.url}/oauth/v2/authorize`);
    authorize.searchParams.set('team', team);
    for (const [name, value] of Object.entries(extra)) authorize.searchParams.set(name, value);
    const approved = await fetch(authorize, { redirect: 'manual' });
    assert.equal(approved.status, 302, 'the fake Slack sends the installer back');
    return new URL(approved.headers.get('location')!);
  }

  /** The whole flow, following every redirect as a browser does; the receiver's last page. */
  async function install(team: string): Promise<{ status: number; page: string }> {
    const start = await fetch(`${system!.receiver.url}/slack/install`, {
      redirect: 'manual',
      signal: AbortSignal.timeout(30_000),
    });
    const authorize = new URL(start.headers.get('location')!);
    authorize.searchParams.set('team', team);
    const done = await fetch(authorize, { signal: AbortSignal.timeout(30_000) });
    return { status: done.status, page: await done.text() };
  }

  const exchanges = () => slack.to('/api/oauth.v2.access').length;

  function appMention(channel: string, ts: string): AppMentionEvent {
    return {
      type: 'app_mention',
      channel,
      user: 'UPERSON01',
      text: '<@UBOT> opening hours?',
      ts,
      event_ts: ts,
    };
  }

  /**
   * An event_callback envelope of `team`, as Slack signs it; with `org`, from a workspace of an
   * Enterprise Grid organisation that installed the app org-wide.
   */
  async function deliver(team: string, event: object, status = 202, org?: string) {
    const body = JSON.stringify({
      token: 'verification-token',
      team_id: team,
      ...(org ? { enterprise_id: org } : {}),
      api_app_id: 'A0FAKEAPP',
      event,
      type: 'event_callback',
      event_id: slackId('Ev'),
      event_time: Math.floor(Date.now() / 1000),
      authorizations: [
        {
          enterprise_id: org ?? null,
          team_id: org ? null : team,
          user_id: 'UBOT',
          is_bot: true,
          is_enterprise_install: org !== undefined,
        },
      ],
    });
    const response = await fetch(`${system!.receiver.url}/webhooks/slack`, {
      method: 'POST',
      headers: signSlackRequest(SIGNING_SECRET, body),
      body,
      signal: AbortSignal.timeout(30_000),
    });
    const answer = (await response.json()) as { workflowId: string };
    assert.equal(response.status, status, JSON.stringify(answer));
    return system!.temporal.client.workflow.getHandle(answer.workflowId);
  }

  /** A mention in a new channel of `team`: its workflow handle and where the reply goes. */
  async function mention(team: string, org?: string) {
    const channel = slackId('C');
    const ts = nextTs();
    return { channel, ts, handle: await deliver(team, appMention(channel, ts), 202, org) };
  }

  const postsIn = (channel: string) => slack.posts().filter((p) => p.body.channel === channel);

  /** Exactly one post in the channel's thread, carrying `token`. */
  function assertOneReplyWith(channel: string, token: string | undefined) {
    const posts = postsIn(channel);
    assert.equal(posts.length, 1, 'exactly one post');
    assert.equal(slack.tokenOf(posts[0]!), token, "posted with the team's own token");
    assert.equal(
      slack.messages.filter((m) => m.channel === channel).length,
      1,
      'and the channel shows it once',
    );
  }

  it("installs two teams through the flow and answers each team's event once, with that team's token", async () => {
    const [a, b] = [newTeam(), newTeam()];
    for (const team of [a, b]) {
      const { status, page } = await install(team);
      assert.equal(status, 200, page);
      assert.match(page, new RegExp(`installed in <b>Team ${team}</b>`));
      assert.doesNotMatch(page, /xox/, 'no token on the page');
      const row = await tenantRow(team);
      assert.equal(row?.source, 'oauth');
      assert.equal(row?.details.teamId, team);
      assert.equal(row?.details.teamName, `Team ${team}`);
      assert.ok((row!.details.scopes as string[]).includes('chat:write'));
      assert.doesNotMatch(JSON.stringify(row?.details), /xox/, 'no token in the details');
      const [token] = slack.tokensOf(team);
      assert.ok(token && !row!.secret!.includes(Buffer.from(token)), 'the token is stored sealed');
      const audit = await auditRows(`tenant:slack:${team}`);
      assert.deepEqual(
        audit.map((r) => [r.actor, r.action]),
        [[SLACK_OAUTH_ACTOR, 'tenant add']],
      );
    }
    const [fromA, fromB] = await Promise.all([mention(a), mention(b)]);
    for (const { handle } of [fromA, fromB])
      assert.equal(((await handle.result()) as EventResult).state, 'succeeded');
    assertOneReplyWith(fromA.channel, slack.tokensOf(a)[0]);
    assertOneReplyWith(fromB.channel, slack.tokensOf(b)[0]);
    assert.equal(postsIn(fromA.channel)[0]!.body.thread_ts, fromA.ts, "in the mention's thread");
  });

  it("stores an org-wide install under its organisation, and answers any of the organisation's workspaces with its token", async () => {
    const org = slackId('E');
    const id = slackId('T');
    slack.team({ id, name: `Org ${org}`, enterpriseId: org });
    const { status, page } = await install(id);
    assert.equal(status, 200, page);
    const { pool } = await database();
    const { rows } = await pool.query('SELECT tenant, details FROM tenant_credentials WHERE tenant = $1', [
      `slack:${org}`,
    ]);
    assert.equal(rows.length, 1, 'one installation, for the organisation');
    assert.equal(rows[0].details.enterpriseId, org);
    const workspaces = [slackId('T'), slackId('T')];
    const mentions = await Promise.all(workspaces.map((workspace) => mention(workspace, org)));
    for (const { handle, channel } of mentions) {
      assert.equal(((await handle.result()) as EventResult).state, 'succeeded');
      assertOneReplyWith(channel, slack.tokensOf(org)[0]);
    }
  });

  it('answers a team that never installed the app with nothing posted and a fix that says to install it', async () => {
    const team = newTeam();
    const { channel, handle } = await mention(team);
    const failed = await waitForState(handle, 'failed');
    assert.equal(failed.lastErrorClass, 'permanent');
    assert.match(failed.recommendedAction ?? '', /install the app in that workspace .*\/slack\/install/);
    assert.equal(postsIn(channel).length, 0, 'nothing reached Slack');
    await handle.terminate('test done');
  });

  it('installs nothing for a forged or missing state, and asks Slack nothing', async () => {
    const team = newTeam();
    const callback = await callbackFor(team);
    const genuine = callback.searchParams.get('state')!;
    const forgeries = [
      signInstallState('not-the-client-secret'),
      `${genuine.slice(0, -2)}${genuine.endsWith('AA') ? 'BB' : 'AA'}`,
      'v1.abc.def.ghi',
    ];
    const before = exchanges();
    for (const state of [...forgeries, undefined]) {
      const forged = new URL(callback);
      if (state === undefined) forged.searchParams.delete('state');
      else forged.searchParams.set('state', state);
      const response = await fetch(forged);
      assert.equal(response.status, 400, `refused: ${state}`);
      assert.match(await response.text(), /not a valid install/);
    }
    assert.equal(exchanges(), before, 'no call to oauth.v2.access');
    assert.equal(await tenantRow(team), undefined, 'nothing stored');
  });

  it('installs nothing for an expired state, nor for a callback replayed after the install', async () => {
    const late = newTeam();
    const callback = await callbackFor(late);
    const before = exchanges();
    callback.searchParams.set('state', signInstallState(slack.clientSecret, Date.now() - 11 * 60_000));
    const expired = await fetch(callback);
    assert.equal(expired.status, 400);
    assert.match(await expired.text(), /expired/);
    assert.equal(exchanges(), before, 'no call to oauth.v2.access');
    assert.equal(await tenantRow(late), undefined);

    const team = newTeam();
    const once = await callbackFor(team);
    assert.equal((await fetch(once)).status, 200);
    const installed = await tenantRow(team);
    const replayed = await fetch(once);
    assert.equal(replayed.status, 400, 'Slack refuses a code used once');
    assert.match(await replayed.text(), /invalid_code/);
    assert.deepEqual(await tenantRow(team), installed, 'the installation is unchanged');
  });

  it('says the install was cancelled when the installer declines, and stores nothing', async () => {
    const team = newTeam();
    const callback = await callbackFor(team, { deny: 'true' });
    assert.equal(callback.searchParams.get('error'), 'access_denied');
    const response = await fetch(callback);
    assert.equal(response.status, 200);
    assert.match(await response.text(), /Install cancelled/);
    assert.equal(await tenantRow(team), undefined);
  });

  it('stops an uninstalled team: a pending retry and its next event fail with nothing posted, other teams still answered; a reinstall lifts it', async () => {
    const [gone, stays] = [newTeam(), newTeam()];
    for (const team of [gone, stays]) assert.equal((await install(team)).status, 200);
    const oldToken = slack.tokensOf(gone)[0]!;

    // A reply Slack rate-limits, waiting for its retry when the uninstall arrives.
    slack.next({ status: 429, retryAfter: '5' });
    const pending = await mention(gone);
    await eventually('the reply waits for its retry', async () => {
      const [row] = await effectRows(`chat:slack:${gone}:${pending.channel}:`);
      return row?.status === 'retry_wait';
    });
    slack.uninstall(gone);
    const notice = await deliver(gone, { type: 'app_uninstalled' });
    const noticed = await resultWithin<EventResult>(notice, 'the app_uninstalled notice');
    assert.equal(noticed.state, 'succeeded', 'acknowledged and done');
    const row = await tenantRow(gone);
    assert.ok(row?.revoked_at, 'revoked');
    assert.equal(row?.secret, null, 'the token is erased');
    assert.equal(row?.revoked_reason, 'app_uninstalled');
    const audit = await auditRows(`tenant:slack:${gone}`);
    assert.deepEqual(audit.at(-1) && [audit.at(-1).actor, audit.at(-1).action], [
      SLACK_EVENTS_ACTOR,
      'tenant revoke',
    ]);

    const failedRetry = await waitForState(pending.handle, 'failed');
    const next = await mention(gone);
    const failedNext = await waitForState(next.handle, 'failed');
    for (const failed of [failedRetry, failedNext]) {
      assert.equal(failed.lastErrorClass, 'permanent');
      assert.match(failed.recommendedAction ?? '', /uninstalled, or its tokens revoked, in that workspace/);
    }
    // The retry is due 5 s after the 429. On a busy machine it can reach Slack before the receiver has
    // recorded the uninstall, carrying the token Slack has already revoked, and be refused: either way
    // no attempt after the rate-limited one used a token Slack still honoured, and nothing was posted.
    const [limited, ...afterUninstall] = postsIn(pending.channel);
    assert.equal(slack.tokenOf(limited!), oldToken, 'the rate-limited attempt reached Slack');
    for (const post of afterUninstall)
      assert.equal(slack.tokenOf(post), oldToken, 'a later attempt only with the token Slack revoked');
    assert.equal(postsIn(next.channel).length, 0, 'nothing sent once the revocation was recorded');
    assert.equal(slack.messages.filter((m) => [pending.channel, next.channel].includes(m.channel)).length, 0);

    const other = await mention(stays);
    assert.equal(
      (await resultWithin<EventResult>(other.handle, "the other team's mention")).state,
      'succeeded',
    );
    assertOneReplyWith(other.channel, slack.tokensOf(stays)[0]);

    // Slack may say it twice: the second notice changes nothing.
    await resultWithin(await deliver(gone, { type: 'app_uninstalled' }), 'the second app_uninstalled notice');
    assert.equal((await tenantRow(gone))?.version, row?.version);

    assert.equal((await install(gone)).status, 200);
    const reinstalled = await tenantRow(gone);
    assert.equal(reinstalled?.revoked_at, null, 'the reinstall lifts the revocation');
    const again = await mention(gone);
    assert.equal(
      (await resultWithin<EventResult>(again.handle, 'the mention after the reinstall')).state,
      'succeeded',
    );
    const newToken = slack.tokensOf(gone).at(-1);
    assert.notEqual(newToken, oldToken);
    assertOneReplyWith(again.channel, newToken);
    for (const handle of [pending.handle, next.handle]) await handle.terminate('test done');
  });

  it("ends an uninstalled team's held work by itself, discarded and audited; another team's held work, and a notice the store does not confirm, change nothing", async () => {
    const [gone, stays] = [newTeam(), newTeam()];
    for (const team of [gone, stays]) assert.equal((await install(team)).status, 200);
    // Two replies Slack answers 500 (maybe applied) and the history does not show: held, each.
    slack.next({ status: 500 }, { status: 500 });
    const [goneHeld, staysHeld] = await Promise.all([mention(gone), mention(stays)]);
    await Promise.all([waitForState(goneHeld.handle, 'held'), waitForState(staysHeld.handle, 'held')]);
    // Anyone with access to Temporal could send this: the run asks the store, which says installed.
    await staysHeld.handle.signal(tenantRevokedSignal, { tenant: `slack:${stays}` });

    slack.uninstall(gone);
    await (await deliver(gone, { type: 'app_uninstalled' })).result();
    const ended = await waitForState(goneHeld.handle, 'discarded');
    const result = (await goneHeld.handle.result()) as EventResult;
    assert.equal(result.state, 'discarded');
    assert.match(result.reason ?? '', new RegExp(`slack:${gone}'s installation was revoked`));
    const last = ended.operatorHistory.at(-1)!;
    assert.deepEqual(
      [last.actor, last.action, last.result],
      [REVOCATION_ACTOR, REVOCATION_ACTION, 'accepted'],
    );
    assert.match(
      last.reason ?? '',
      /revoked \(app_uninstalled, .*\): nothing can be sent with it\. Whether the held message reached the target is unknown/,
    );
    const [row] = await effectRows(`chat:slack:${gone}:${goneHeld.channel}:`);
    assert.equal(row?.status, 'discarded');
    const audit = (await auditRows(goneHeld.handle.workflowId)).at(-1);
    assert.deepEqual(audit && [audit.actor, audit.action, audit.state_before, audit.state_after], [
      REVOCATION_ACTOR,
      REVOCATION_ACTION,
      'held',
      'discarded',
    ]);
    assert.equal(postsIn(goneHeld.channel).length, 1, 'only the attempt before the uninstall reached Slack');

    const other = await staysHeld.handle.query(statusQuery);
    assert.equal(other.state, 'held', "the other team's held work waits for an operator");
    assert.equal(other.operatorHistory.length, 0, 'and the unconfirmed notice left no trace');
    await staysHeld.handle.terminate('test done');
  });

  it("ends a team's held work when the admin removes it (`replyflow tenant remove`), discarded, with nothing posted after", async () => {
    const team = newTeam();
    assert.equal((await install(team)).status, 200);
    slack.next({ status: 500 });
    const held = await mention(team);
    await waitForState(held.handle, 'held');

    const removed = await cli(['tenant', 'remove', `slack:${team}`, '--reason', 'client left'], {
      env: await adminEnv(),
    });
    assert.equal(removed.code, 0, removed.stderr);
    // No Slack notice: a receiver finds the revocation in the store at its next look, and announces
    // it on its own task queue, where this worker runs it (two steps, so that a failure says which).
    const revokedAt = (await tenantRow(team))?.revoked_at;
    assert.ok(revokedAt, 'the removal revoked the installation');
    const announcement = system!.temporal.client.workflow.getHandle(
      tenantRevokedWorkflowId(`slack:${team}`, String(revokedAt.getTime())),
    );
    const warnings = () =>
      log
        .raw()
        .match(/.*could not announce.*/g)
        ?.join(' | ') ?? 'none';
    const announced = await eventually(
      'a receiver announces the revocation',
      () => announcement.describe().catch(() => undefined),
      {
        timeoutMs: ANNOUNCE_EVERY_MS + 20_000,
        describe: () => `not started; the receiver warned: ${warnings()}`,
      },
    );
    assert.equal(announced.taskQueue, config.TEMPORAL_TASK_QUEUE, 'announced by this receiver');
    const ended = await waitForState(held.handle, 'discarded');
    assert.equal(((await held.handle.result()) as EventResult).state, 'discarded');
    assert.match(
      ended.operatorHistory.at(-1)?.reason ?? '',
      new RegExp(`slack:${team}'s installation was revoked \\(removed, .*\\): nothing can be sent with it`),
    );
    const [row] = await effectRows(`chat:slack:${team}:${held.channel}:`);
    assert.equal(row?.status, 'discarded');
    assert.deepEqual(
      (await auditRows(`tenant:slack:${team}`)).map((a) => [a.action, a.reason, a.result]).slice(-1),
      [['tenant remove', 'client left', 'accepted: revoked']],
    );
    assert.equal(postsIn(held.channel).length, 1, 'only the attempt before the removal reached Slack');
    // The next event of the team is not answered with the erased token.
    const after = await mention(team);
    await waitForState(after.handle, 'failed');
    assert.equal(postsIn(after.channel).length, 0);
  });

  it('revokes a team whose bot token was revoked (tokens_revoked), and not for user tokens only', async () => {
    const [bot, user] = [newTeam(), newTeam()];
    for (const team of [bot, user]) assert.equal((await install(team)).status, 200);
    await (await deliver(user, { type: 'tokens_revoked', tokens: { oauth: ['UPERSON01'] } })).result();
    assert.equal((await tenantRow(user))?.revoked_at, null, 'a user token is not the installation');
    await (await deliver(bot, { type: 'tokens_revoked', tokens: { bot: ['UBOT'] } })).result();
    assert.equal((await tenantRow(bot))?.revoked_reason, 'tokens_revoked');
  });

  it('answers 503 when the revocation cannot be recorded, so that Slack delivers it again', async () => {
    const team = newTeam();
    assert.equal((await install(team)).status, 200);
    const server = await devServer();
    const cut = await startTestReceiver({ config, temporalAddress: server.address, pool: unreachablePool() });
    try {
      const body = JSON.stringify({
        team_id: team,
        api_app_id: 'A0FAKEAPP',
        event: { type: 'app_uninstalled' },
        type: 'event_callback',
        event_id: slackId('Ev'),
        event_time: Math.floor(Date.now() / 1000),
      });
      const response = await fetch(`${cut.url}/webhooks/slack`, {
        method: 'POST',
        headers: signSlackRequest(SIGNING_SECRET, body),
        body,
      });
      assert.equal(response.status, 503);
      assert.ok(response.headers.get('retry-after'));
      assert.equal((await tenantRow(team))?.revoked_at, null);
      const redelivered = await fetch(`${system!.receiver.url}/webhooks/slack`, {
        method: 'POST',
        headers: signSlackRequest(SIGNING_SECRET, body),
        body,
      });
      assert.equal(redelivered.status, 202);
      assert.ok((await tenantRow(team))?.revoked_at, 'the redelivery revoked it');
    } finally {
      await cut.stop();
    }
  });

  it('refreshes a token near its expiry once and posts with the new one; a token Slack calls expired is refreshed too', async () => {
    // Token rotation: the installed token expires in two minutes, inside the refresh margin.
    const team = newTeam({ expiresIn: 120 });
    assert.equal((await install(team)).status, 200);
    const installed = await tenantRow(team);
    assert.ok(installed?.expires_at && installed.expires_at.getTime() < Date.now() + 121_000);

    const first = await mention(team);
    assert.equal(((await first.handle.result()) as EventResult).state, 'succeeded');
    const second = await mention(team);
    assert.equal(((await second.handle.result()) as EventResult).state, 'succeeded');
    assert.deepEqual(slack.refreshes.filter((t) => t === team).length, 1, 'refreshed once');
    const [original, refreshed] = slack.tokensOf(team);
    assertOneReplyWith(first.channel, refreshed);
    assertOneReplyWith(second.channel, refreshed);
    assert.notEqual(refreshed, original);
    const stored = await tenantRow(team);
    assert.equal(stored?.version, installed.version + 1, 'stored over the version it replaced');
    assert.ok(
      stored?.expires_at && stored.expires_at.getTime() > Date.now() + 11 * 3_600_000,
      "Slack's 12 h",
    );

    slack.expire(team);
    const third = await mention(team);
    assert.equal(((await third.handle.result()) as EventResult).state, 'succeeded');
    assert.equal(slack.refreshes.filter((t) => t === team).length, 2);
    const posts = postsIn(third.channel);
    assert.deepEqual(
      posts.map((p) => slack.tokenOf(p)),
      [refreshed, slack.tokensOf(team)[2]],
      'refused as expired, then posted once with the new token',
    );
    assert.equal(slack.messages.filter((m) => m.channel === third.channel).length, 1);
  });

  it("shows a page and stores nothing when Slack refuses the app's credentials, is unreachable, or PostgreSQL is down", async () => {
    const server = await devServer();
    const team = newTeam();
    const attempt = async (env: Record<string, string>, pool?: ReturnType<typeof unreachablePool>) => {
      const other = await startTestReceiver({
        config: testConfig({ ...env, SLACK_SIGNING_SECRET: SIGNING_SECRET }),
        temporalAddress: server.address,
        ...(pool ? { pool } : {}),
      });
      try {
        const start = await fetch(`${other.url}/slack/install`, { redirect: 'manual' });
        // The installer's browser reaches Slack even when this receiver cannot (SLACK_API_URL closed).
        const authorize = new URL(
          `/oauth/v2/authorize${new URL(start.headers.get('location')!).search}`,
          slack.url,
        );
        authorize.searchParams.set('team', team);
        // The app's Redirect URL names the suite's receiver; this one is another receiver of the app.
        const callback = new URL((await fetch(authorize, { redirect: 'manual' })).headers.get('location')!);
        const done = await fetch(`${other.url}${callback.pathname}${callback.search}`);
        return { status: done.status, page: await done.text() };
      } finally {
        await other.stop();
      }
    };
    const credentials = {
      SLACK_CLIENT_ID: slack.clientId,
      SLACK_CLIENT_SECRET: slack.clientSecret,
      SLACK_API_URL: `${slack.url}/api/`,
    };
    const wrongSecret = await attempt({ ...credentials, SLACK_CLIENT_SECRET: 'not-the-apps-secret' });
    assert.equal(wrongSecret.status, 400);
    assert.match(wrongSecret.page, /Slack refused the install \(bad_client_secret\)/);
    assert.doesNotMatch(wrongSecret.page, /not-the-apps-secret/);

    const unreachable = await attempt({ ...credentials, SLACK_API_URL: 'http://127.0.0.1:1/api/' });
    assert.equal(unreachable.status, 502);
    assert.match(unreachable.page, /Slack could not be reached/);

    const downDb = await attempt(credentials, unreachablePool());
    assert.equal(downDb.status, 503);
    assert.match(downDb.page, /could not be saved/);
    assert.equal(await tenantRow(team), undefined);
  });

  it('shows the workflow status of a revoked team without a token anywhere', async () => {
    const team = newTeam();
    assert.equal((await install(team)).status, 200);
    const token = slack.tokensOf(team)[0]!;
    slack.uninstall(team);
    await (await deliver(team, { type: 'app_uninstalled' })).result();
    const { handle } = await mention(team);
    const failed = await waitForState(handle, 'failed');
    assert.doesNotMatch(JSON.stringify(await handle.query(statusQuery)), new RegExp(token));
    assert.doesNotMatch(JSON.stringify(failed), /xox/);
    await handle.terminate('test done');
  });

  it('never logs a token, a code or the client secret', () => {
    const text = log.raw();
    assert.match(text, /slack app installed/, 'the receiver did log the installs');
    for (const secret of [/xox[bep]-/, /code-[0-9a-f]{8}/, new RegExp(slack.clientSecret)])
      assert.doesNotMatch(text, secret);
  });
});
