-- Operators are accounts: a name, roles, and one credential (a token, stored only as its SHA-256)
-- that the codec server checks before it seals a decision. Disabling or rotating takes effect at once.
CREATE TABLE operators (
  name           text        PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
  roles          text[]      NOT NULL,
  token_hash     bytea       NOT NULL UNIQUE,
  credential_id  uuid        NOT NULL,      -- named in every seal; a rotation makes older seals invalid
  disabled_at    timestamptz,
  created_at     timestamptz NOT NULL DEFAULT now(),
  rotated_at     timestamptz NOT NULL DEFAULT now()
);

-- Each sealed decision may be used once: its request id, and the delivery (update id or signal) that
-- used it, so that a retried check of the same delivery is not mistaken for a replay.
CREATE TABLE decision_requests (
  request_id   text        PRIMARY KEY,
  workflow_id  text        NOT NULL,
  delivery     text        NOT NULL,
  operator     text        NOT NULL,
  used_at      timestamptz NOT NULL DEFAULT now()
);
