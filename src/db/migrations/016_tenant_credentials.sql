-- The accounts one replyflow answers for: each Slack workspace (or Enterprise Grid organisation) the app
-- is installed in, each LINE channel, each GitHub App installation that needs a stored credential. A
-- row's secret (tokens, channel secrets) is AES-256-GCM ciphertext under the payload key `key_id`,
-- bound to the row's tenant (src/tenants/secret-box.ts): a database reader without the payload key
-- sees no token, and a ciphertext copied to another row does not open. `details` holds only what may
-- be shown (a team's name, the bot user, scopes), never a secret.
CREATE TABLE tenant_credentials (
  tenant          text        PRIMARY KEY,              -- 'slack:T…' | 'slack:E…' | 'line:U…' (src/tenants/tenant-id.ts)
  provider        text        NOT NULL,
  source          text        NOT NULL,                 -- 'oauth' (installed through /slack/install) | 'admin' | 'file'
  details         jsonb       NOT NULL DEFAULT '{}',
  key_id          text        NOT NULL,
  secret          bytea,                                -- NULL once revoked: nothing is sent with a revoked credential
  expires_at      timestamptz,                          -- when the access token expires (Slack token rotation)
  version         integer     NOT NULL DEFAULT 1,       -- bumped by every change: a token refresh updates only the version it read
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  revoked_at      timestamptz,
  revoked_reason  text,
  CHECK ((secret IS NULL) = (revoked_at IS NOT NULL))
);
CREATE INDEX tenant_credentials_provider ON tenant_credentials (provider, tenant);
