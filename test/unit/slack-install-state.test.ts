// The install flow's `state` (src/tenants/slack-oauth.ts): signed with a key derived from the client
// secret, good for ten minutes, refused when anything about it is off; and the authorize URL it goes
// out in, derived from SLACK_API_URL.
import assert from 'node:assert/strict';
import { loadConfig, slackOAuthSettings } from '../../src/config';
import { InstallStateError } from '../../src/tenants/errors';
import {
  authorizeUrl,
  INSTALL_STATE_TTL_MS,
  signInstallState,
  verifyInstallState,
} from '../../src/tenants/slack-oauth';

const SECRET = 'the-apps-client-secret';
const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);

const refusal = (pattern: RegExp) => (err: unknown) =>
  err instanceof InstallStateError && pattern.test(err.message);

describe('Slack install state (signInstallState / verifyInstallState)', () => {
  it('accepts a state it signed, until ten minutes after', () => {
    const state = signInstallState(SECRET, NOW);
    verifyInstallState(SECRET, state, NOW);
    verifyInstallState(SECRET, state, NOW + INSTALL_STATE_TTL_MS);
  });

  it('gives every install its own state', () => {
    assert.notEqual(signInstallState(SECRET, NOW), signInstallState(SECRET, NOW));
  });

  it('refuses a state older than ten minutes, or issued well in the future', () => {
    const state = signInstallState(SECRET, NOW);
    assert.throws(
      () => verifyInstallState(SECRET, state, NOW + INSTALL_STATE_TTL_MS + 1000),
      refusal(/expired/),
    );
    assert.throws(() => verifyInstallState(SECRET, state, NOW - 5 * 60_000), refusal(/expired/));
  });

  it('refuses a state signed with another secret', () => {
    assert.throws(
      () => verifyInstallState(SECRET, signInstallState('another-apps-secret', NOW), NOW),
      refusal(/not issued by this app/),
    );
  });

  it('refuses a state with any part changed', () => {
    const state = signInstallState(SECRET, NOW);
    const [version, issued, nonce, mac] = state.split('.') as [string, string, string, string];
    const later = (Number.parseInt(issued, 36) + 60).toString(36);
    const otherNonce = `${nonce[0] === 'A' ? 'B' : 'A'}${nonce.slice(1)}`;
    const otherMac = `${mac[0] === 'A' ? 'B' : 'A'}${mac.slice(1)}`;
    for (const forged of [
      [version, later, nonce, mac],
      [version, issued, otherNonce, mac],
      [version, issued, nonce, otherMac],
    ])
      assert.throws(
        () => verifyInstallState(SECRET, forged.join('.'), NOW),
        refusal(/not issued by this app/),
      );
    assert.throws(
      () => verifyInstallState(SECRET, ['v2', issued, nonce, mac].join('.'), NOW),
      refusal(/malformed/),
    );
  });

  it('refuses what is not a state at all', () => {
    for (const given of [
      undefined,
      '',
      'state',
      ['v1', 'a'],
      'v1.a.b.c',
      `${signInstallState(SECRET, NOW)}.x`,
    ])
      assert.throws(
        () => verifyInstallState(SECRET, given, NOW),
        refusal(/missing or malformed/),
        String(given),
      );
  });
});

describe("Slack's authorize URL (authorizeUrl)", () => {
  it("is slack.com's /oauth/v2/authorize for the default SLACK_API_URL, with the app, its scopes and the state", () => {
    const settings = slackOAuthSettings(
      loadConfig({ SLACK_CLIENT_ID: '123.456', SLACK_CLIENT_SECRET: SECRET }),
    )!;
    const url = new URL(authorizeUrl(settings, 'the-state'));
    assert.equal(`${url.origin}${url.pathname}`, 'https://slack.com/oauth/v2/authorize');
    assert.equal(url.searchParams.get('client_id'), '123.456');
    assert.equal(url.searchParams.get('scope'), settings.scopes.join(','));
    assert.equal(url.searchParams.get('state'), 'the-state');
    assert.equal(url.searchParams.has('redirect_uri'), false, "Slack's own Redirect URL unless one is set");
    assert.equal(url.searchParams.has('client_secret'), false);
  });

  it('sits beside SLACK_API_URL, and carries SLACK_REDIRECT_URI when set', () => {
    const settings = slackOAuthSettings(
      loadConfig({
        SLACK_CLIENT_ID: '1.2',
        SLACK_CLIENT_SECRET: SECRET,
        SLACK_API_URL: 'http://127.0.0.1:4000/api/',
        SLACK_REDIRECT_URI: 'https://replyflow.example.com/slack/oauth_redirect',
      }),
    )!;
    const url = new URL(authorizeUrl(settings, 's'));
    assert.equal(`${url.origin}${url.pathname}`, 'http://127.0.0.1:4000/oauth/v2/authorize');
    assert.equal(url.searchParams.get('redirect_uri'), 'https://replyflow.example.com/slack/oauth_redirect');
  });
});
