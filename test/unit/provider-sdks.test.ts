// A provider's SDK is loaded only by a replyflow that serves the provider (src/provider-sdks.ts): a
// child process loads what `replyflow start` loads, builds the receiver's providers and the worker's
// targets for a configuration without Slack, LINE or Stripe, and says which of the three SDKs it holds.
// Then with all three configured and used once each (a signature checked, a Slack failure classified):
// there the check sees all three.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const SDKS = ['@line/bot-sdk', '@slack/web-api', 'stripe'];

const CHILD = `
const { loadConfig } = require('./src/config.ts');
require('./src/cli/main.ts');
require('./src/launcher.ts');
require('./src/worker.ts');
const { createProviders } = require('./src/providers/index.ts');
const { createTargets } = require('./src/targets/index.ts');
const config = loadConfig(JSON.parse(process.argv[1]));
const providers = createProviders(config, {});
createTargets(config);
if (process.argv[2] === 'use') {
  const headers = {
    'x-line-signature': Buffer.alloc(32).toString('base64'),
    'stripe-signature': 't=' + Math.floor(Date.now() / 1000) + ',v1=' + '0'.repeat(64),
  };
  for (const provider of providers.filter((p) => p.name === 'line' || p.name === 'stripe')) {
    const ctx = { rawBody: Buffer.from('{}'), headers, params: {}, receivedAt: new Date(), correlationId: 'c' };
    try { provider.verify(ctx); } catch {}
  }
  require('./src/targets/slack.ts').classifySlackError(new Error('refused'));
}
const loaded = Object.keys(require.cache).map((f) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(f)?.[1]);
console.log(JSON.stringify(${JSON.stringify(SDKS)}.filter((sdk) => loaded.includes(sdk))));
`;

function sdksLoaded(env: Record<string, string>, use = false): string[] {
  const args = ['-r', 'tsx/cjs', '-e', CHILD, JSON.stringify(env), ...(use ? ['use'] : [])];
  const out = execFileSync(process.execPath, args, {
    cwd: ROOT,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '' },
  });
  return JSON.parse(out.trim().split('\n').at(-1) ?? '[]');
}

/** A replyflow for GitHub alone. */
const GITHUB = { GITHUB_WEBHOOK_SECRET: 'github-webhook-secret', GITHUB_TOKEN: 'ghp_test' };

describe("providers' SDKs are loaded by the processes that use them (src/provider-sdks.ts)", function () {
  this.timeout(60_000);

  it('loads none of Slack, LINE and Stripe for a replyflow that serves none of them', () => {
    assert.deepEqual(sdksLoaded(GITHUB), []);
  });

  it('loads each once a replyflow that serves it uses it', () => {
    const all = {
      ...GITHUB,
      SLACK_SIGNING_SECRET: 'slack-signing-secret',
      SLACK_BOT_TOKEN: 'xoxb-test',
      LINE_CHANNEL_SECRET: 'line-channel-secret',
      LINE_CHANNEL_ACCESS_TOKEN: 'line-token',
      STRIPE_WEBHOOK_SECRET: 'whsec_test',
    };
    assert.deepEqual(sdksLoaded(all, true), SDKS);
  });
});
