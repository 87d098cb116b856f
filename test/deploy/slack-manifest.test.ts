// deploy/slack-app-manifest.yaml against the code: it parses, points Slack at the receiver's Slack
// endpoint, subscribes to the event types the Slack provider answers and to nothing else, and asks
// for exactly the bot scopes those events, the slash commands and the Slack target's calls need, and
// sends commands and interactivity to the same endpoint (docs/slack.md says why each one is there).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { SLACK_MANIFEST_SCOPES } from '../../src/config';
import {
  SLACK_CHAT_EVENT_TYPES,
  SLACK_INSTALLATION_EVENT_TYPES,
  slackProvider,
} from '../../src/providers/slack';
import { PROJECT_ROOT } from '../../src/temporal/binaries';

const MANIFEST = path.join(PROJECT_ROOT, 'deploy', 'slack-app-manifest.yaml');

/**
 * The scope each bot event needs, from Slack's event reference (https://docs.slack.dev/reference/events,
 * e.g. /app_mention and /message.im, checked Nov 2026).
 */
const EVENT_SCOPES: Record<string, string | undefined> = {
  app_mention: 'app_mentions:read',
  'message.channels': 'channels:history',
  'message.groups': 'groups:history',
  'message.im': 'im:history',
  'message.mpim': 'mpim:history',
  // https://docs.slack.dev/reference/events/app_uninstalled and /tokens_revoked: no scope.
  app_uninstalled: undefined,
  tokens_revoked: undefined,
};

/**
 * The scopes the Slack target's calls need (src/targets/slack.ts): chat.postMessage, and the lookup's
 * conversations.replies / conversations.history in every kind of conversation a reply can go to.
 */
const TARGET_SCOPES = ['chat:write', 'channels:history', 'groups:history', 'im:history', 'mpim:history'];

/** Slash commands need `commands` (https://docs.slack.dev/interactivity/implementing-slash-commands). */
const COMMAND_SCOPES = ['commands'];

interface Manifest {
  features: {
    app_home?: { messages_tab_enabled?: boolean; messages_tab_read_only_enabled?: boolean };
    bot_user?: { display_name?: string };
    slash_commands?: { command: string; url: string; description: string }[];
  };
  oauth_config: { redirect_urls?: string[]; scopes: { bot?: string[]; user?: string[] } };
  settings: {
    event_subscriptions: { request_url: string; bot_events: string[]; user_events?: string[] };
    interactivity?: { is_enabled: boolean; request_url: string };
  };
}

describe('the Slack app manifest (deploy/slack-app-manifest.yaml)', () => {
  const document = YAML.parseDocument(readFileSync(MANIFEST, 'utf8'));
  const manifest = document.toJS() as Manifest;
  const { bot_events: events, request_url: requestUrl } = manifest.settings.event_subscriptions;
  const scopes = manifest.oauth_config.scopes.bot ?? [];

  it('parses as YAML, with a bot user', () => {
    assert.deepEqual(document.errors, []);
    assert.ok(manifest.features.bot_user?.display_name);
  });

  it("points Slack's request URL at the receiver's Slack endpoint", () => {
    assert.equal(new URL(requestUrl).pathname, `/webhooks/${slackProvider('unused').name}`);
  });

  it('subscribes to the event types the Slack provider answers or revokes an installation on, and to no other', () => {
    const types = new Set(events.map((event) => event.split('.')[0]));
    assert.deepEqual(
      [...types].sort(),
      [...SLACK_CHAT_EVENT_TYPES, ...SLACK_INSTALLATION_EVENT_TYPES].sort(),
    );
    assert.ok(events.includes('app_mention'), 'mentions');
    assert.ok(events.includes('message.im'), 'direct messages');
    assert.equal(manifest.settings.event_subscriptions.user_events, undefined, 'no user events');
  });

  it('lets people write to the bot directly (its Messages tab)', () => {
    assert.equal(manifest.features.app_home?.messages_tab_enabled, true);
    assert.equal(manifest.features.app_home?.messages_tab_read_only_enabled, false);
  });

  it('asks for exactly the bot scopes its events and the Slack target need, and no user scope', () => {
    for (const event of events) assert.ok(event in EVENT_SCOPES, `a known bot event: ${event}`);
    const needed = new Set([
      ...events.flatMap((event) => EVENT_SCOPES[event] ?? []),
      ...TARGET_SCOPES,
      ...COMMAND_SCOPES,
    ]);
    assert.deepEqual([...scopes].sort(), [...needed].sort());
    assert.equal(new Set(scopes).size, scopes.length, 'each scope once');
    assert.equal(manifest.oauth_config.scopes.user, undefined, 'no user scopes');
  });

  it('asks an install through /slack/install for the same bot scopes by default (SLACK_SCOPES)', () => {
    assert.deepEqual([...SLACK_MANIFEST_SCOPES].sort(), [...scopes].sort());
  });

  it("sends installers back to the receiver's /slack/oauth_redirect, on the same host as its events", () => {
    const [redirect, ...more] = manifest.oauth_config.redirect_urls ?? [];
    assert.equal(more.length, 0);
    assert.equal(new URL(redirect!).pathname, '/slack/oauth_redirect');
    assert.equal(new URL(redirect!).host, new URL(requestUrl).host);
  });

  it('sends its slash commands and interactivity to the same endpoint as its events', () => {
    const commands = manifest.features.slash_commands ?? [];
    assert.ok(commands.length > 0, 'at least one slash command');
    for (const command of commands) {
      assert.match(command.command, /^\/[a-z0-9_-]+$/, 'a command is / and a lower-case name');
      assert.equal(command.url, requestUrl, command.command);
      assert.ok(command.description);
    }
    assert.deepEqual(manifest.settings.interactivity, { is_enabled: true, request_url: requestUrl });
  });
});
