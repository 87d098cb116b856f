-- Browser sessions of the codec login, one row per sign-in: the cookie names its row, and signing out
-- revokes the row, so a copy of the cookie stops counting at once (the cookie's MAC alone would keep it
-- valid until it expires). A row holds no token and no cookie, only who signed in, with which
-- credential, and until when; expired rows are pruned as new ones come.
CREATE TABLE codec_sessions (
  id             uuid        PRIMARY KEY,
  operator       text        NOT NULL,
  credential_id  uuid        NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  expires_at     timestamptz NOT NULL,
  revoked_at     timestamptz
);
CREATE INDEX codec_sessions_expires_at ON codec_sessions (expires_at);
