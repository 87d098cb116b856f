// `npm run bench:tenants`: does one tenant's burst delay another tenant's first reply (issue 28, point
// 5)? A Slack app installed in two workspaces through the OAuth flow, against a fake Slack that
// refuses a second post into a channel within a second (429, as chat.postMessage's "1 per second per
// channel"). The system as `npm start` runs it (bench/chaos/system.ts: one `replyflow start`, embedded
// PostgreSQL, the dev server on its file store). Team A gets `--burst` mentions into one channel at
// concurrency `--concurrency`; meanwhile team B gets one mention a second, each in a channel of its
// own, until `--after` seconds past the burst's last acknowledgement. Each of B's first replies is
// timed from its webhook to the fake's receipt and compared with B's unloaded latency + 1 s (the
// issue's bound). Team A's channel is paced by then, so the run also shows what pacing does: its posts
// a second, and how many of them Slack refused. The fake records the token of every post: each team's
// must carry its own installation's.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { FakeSlack } from '../test/support/fakes/slack';
import { signSlackRequest } from '../test/support/signers';
import { System } from './chaos/system';
import { printLate } from './phases';
import { envOption, percentile } from './system';

const SIGNING_SECRET = randomBytes(16).toString('hex');

const slackId = (prefix: string) => `${prefix}${randomBytes(5).toString('hex').toUpperCase()}`;

let seq = 0;
const nextTs = () => `${Math.floor(Date.now() / 1000)}.${String(++seq).padStart(6, '0')}`;

/** One mention of the bot, sent: when, its workflow, and its answer's status. */
interface Sent {
  channel: string;
  sent: number;
  workflowId: string;
}

class SlackSender {
  /** Every answer other than 2xx, by status (0: the connection failed). */
  readonly refused = new Map<number, number>();

  constructor(private readonly receiver: string) {}

  /**
   * An app_mention in `channel` of `team`, as Slack signs its Events API envelopes, delivered until it
   * is acknowledged (a 503 is retried after its Retry-After, at most 5 s, as a sender would).
   */
  async mention(team: string, channel: string): Promise<Sent> {
    const ts = nextTs();
    const body = JSON.stringify({
      token: 'verification-token',
      team_id: team,
      api_app_id: 'A0BENCHAPP',
      type: 'event_callback',
      event_id: slackId('Ev'),
      event_time: Math.floor(Date.now() / 1000),
      event: {
        type: 'app_mention',
        channel,
        user: 'UPERSON01',
        text: '<@UBOT> opening hours?',
        ts,
        event_ts: ts,
      },
      authorizations: [{ enterprise_id: null, team_id: team, user_id: 'UBOT', is_bot: true }],
    });
    const sent = Date.now();
    for (;;) {
      let retryAfterS = 0;
      const answer = await fetch(`${this.receiver}/webhooks/slack`, {
        method: 'POST',
        headers: signSlackRequest(SIGNING_SECRET, body),
        body,
      }).then(
        async (response) => {
          retryAfterS = Number(response.headers.get('retry-after') ?? 0);
          const json = (await response.json().catch(() => ({}))) as { workflowId?: string };
          return { status: response.status, workflowId: json.workflowId };
        },
        () => ({ status: 0, workflowId: undefined }),
      );
      if (answer.status >= 200 && answer.status < 300 && answer.workflowId)
        return { channel, sent, workflowId: answer.workflowId };
      this.refused.set(answer.status, (this.refused.get(answer.status) ?? 0) + 1);
      if (answer.status !== 503 && answer.status !== 0)
        throw new Error(`the receiver answered ${answer.status} to a mention of ${team}`);
      await sleep(Math.min(5, retryAfterS) * 1000 || 500);
    }
  }
}

/** /slack/install → the fake's authorize page (the installer picks `team`) → the receiver's last page. */
async function install(receiver: string, team: string): Promise<void> {
  const start = await fetch(`${receiver}/slack/install`, { redirect: 'manual' });
  const authorize = new URL(start.headers.get('location') ?? '');
  authorize.searchParams.set('team', team);
  const done = await fetch(authorize);
  if (done.status !== 200) throw new Error(`installing ${team} ended ${done.status}: ${await done.text()}`);
}

/** When the fake first received a post into `channel` (ms since epoch), waiting up to `timeoutMs`. */
async function firstPostIn(
  slack: FakeSlack,
  channels: string[],
  timeoutMs: number,
): Promise<Map<string, number>> {
  const deadline = Date.now() + timeoutMs;
  const wanted = new Set(channels);
  const found = new Map<string, number>();
  for (;;) {
    for (const post of slack.posts()) {
      const channel = String(post.body.channel);
      if (wanted.has(channel) && !found.has(channel)) found.set(channel, post.at);
    }
    if (found.size === wanted.size || Date.now() > deadline) return found;
    await sleep(50);
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      burst: { type: 'string', default: '1500' },
      concurrency: { type: 'string', default: '32' },
      unloaded: { type: 'string', default: '10' },
      after: { type: 'string', default: '60' },
      env: { type: 'string', multiple: true, default: [] },
    },
  });
  const [burst, concurrency, unloadedCount, afterS] = [
    values.burst,
    values.concurrency,
    values.unloaded,
    values.after,
  ].map(Number) as [number, number, number, number];
  console.log(
    `machine: ${os.cpus().length} CPUs, node ${process.version}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );

  const slack = await new FakeSlack().start();
  slack.channelIntervalMs = 1000;
  const [teamA, teamB] = [slackId('TA'), slackId('TB')];
  for (const id of [teamA, teamB]) slack.team({ id, name: `Team ${id}` });
  const system = await System.start({
    combined: 1,
    receivers: 0,
    workers: 0,
    temporalStore: 'file',
    env: {
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_CLIENT_ID: slack.clientId,
      SLACK_CLIENT_SECRET: slack.clientSecret,
      SLACK_API_URL: `${slack.url}/api/`,
      ...envOption(values.env),
    },
  });
  try {
    const receiver = system.receiverUrls[0]!;
    slack.redirectUri = `${receiver}/slack/oauth_redirect`;
    for (const team of [teamA, teamB]) await install(receiver, team);
    const sender = new SlackSender(receiver);

    // Team B alone: one mention at a time, each in a new channel, until its reply.
    const unloaded: number[] = [];
    for (let i = 0; i < unloadedCount; i++) {
      const m = await sender.mention(teamB, slackId('CU'));
      const at = (await firstPostIn(slack, [m.channel], 60_000)).get(m.channel);
      if (at === undefined) throw new Error('an unloaded mention got no reply within 60 s');
      unloaded.push(at - m.sent);
    }
    unloaded.sort((a, b) => a - b);
    const bound = percentile(unloaded, 50) + 1000;
    console.log(`unloaded (team B): p50 ${percentile(unloaded, 50)} ms, bound ${bound} ms`);

    // Team A's burst into one channel, and beside it team B's one mention a second.
    const burstChannel = slackId('CBURST');
    console.log(`team A: ${burst} mentions into one channel; team B: one a second into channels of its own…`);
    const began = Date.now();
    let queued = 0;
    let ackedAt = Number.POSITIVE_INFINITY;
    const flood = Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (queued < burst) {
          queued += 1;
          await sender.mention(teamA, burstChannel);
        }
      }),
    ).then(() => {
      ackedAt = Date.now();
    });
    const quiet: Sent[] = [];
    while (Date.now() < ackedAt + afterS * 1000) {
      const due = Date.now() + 1000;
      quiet.push(await sender.mention(teamB, slackId('CQ')));
      await sleep(Math.max(0, due - Date.now()));
    }
    await flood;
    const replied = await firstPostIn(
      slack,
      quiet.map((m) => m.channel),
      120_000,
    );
    const ended = Date.now();

    // Team B's first replies against the bound, while the burst was acknowledged and after.
    const waits = quiet.map((m) => ({
      ...m,
      ms: (replied.get(m.channel) ?? Number.POSITIVE_INFINITY) - m.sent,
    }));
    const part = (list: typeof waits) => {
      const ms = list.map((w) => w.ms).sort((a, b) => a - b);
      return `${ms.filter((m) => m <= bound).length} of ${ms.length} within, p50 ${percentile(ms, 50)} ms, p99 ${percentile(ms, 99)} ms, max ${ms.at(-1)} ms`;
    };
    // Team A's channel: what reached Slack, what Slack took, how far apart.
    const burstPosts = slack.posts().filter((p) => p.body.channel === burstChannel);
    const taken = slack.messages.filter((m) => m.channel === burstChannel).length;
    const seconds = (ended - began) / 1000;
    const gaps = burstPosts
      .slice(1)
      .map((p, i) => p.at - burstPosts[i]!.at)
      .sort((a, b) => a - b);
    // Which token each post carried: a team's replies with its own installation's token, and no other.
    const tokensA = new Set(slack.tokensOf(teamA));
    const tokensB = new Set(slack.tokensOf(teamB));
    const quietChannels = new Set(quiet.map((m) => m.channel));
    const wrongToken = slack
      .posts()
      .filter((p) =>
        quietChannels.has(String(p.body.channel))
          ? !tokensB.has(slack.tokenOf(p) ?? '')
          : p.body.channel === burstChannel && !tokensA.has(slack.tokenOf(p) ?? ''),
      ).length;
    const twice = [...quietChannels].filter(
      (channel) => slack.messages.filter((m) => m.channel === channel).length > 1,
    ).length;

    console.log('');
    console.log(`team B's first replies within unloaded p50 + 1 s (${bound} ms): ${part(waits)}`);
    console.log(
      `  sent while team A's burst was acknowledged: ${part(waits.filter((w) => w.sent < ackedAt))}`,
    );
    console.log(`  sent after: ${part(waits.filter((w) => w.sent >= ackedAt))}`);
    console.log(
      `team A's burst: acked in ${((ackedAt - began) / 1000).toFixed(1)} s (${(burst / ((ackedAt - began) / 1000)).toFixed(0)}/s); ` +
        `its channel in ${seconds.toFixed(0)} s: ${taken} posts taken (${(taken / seconds).toFixed(2)}/s), ` +
        `${slack.rateLimited.get(burstChannel) ?? 0} refused 429 of ${burstPosts.length} tried; ` +
        `ms between tries: min ${gaps[0]}, p10 ${percentile(gaps, 10)}, p50 ${percentile(gaps, 50)}, p90 ${percentile(gaps, 90)}`,
    );
    console.log(
      `receiver: ${[...sender.refused].map(([status, n]) => `${n} × ${status || 'no connection'}`).join(', ') || 'every mention acknowledged at once'}`,
    );
    console.log(
      `tokens: ${wrongToken} posts with another team's token; team B channels answered twice: ${twice}`,
    );
    await printLate(system, waits, bound, began);
  } finally {
    await system.stop();
    system.remove();
    await slack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
