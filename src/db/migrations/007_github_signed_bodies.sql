-- GitHub signs only the body: the SHA-256 of each signed body seen within the replay window and the
-- delivery id it came under, so that the same bytes re-sent under a new delivery id are refused
-- (src/providers/github.ts). A hash, never the body.
CREATE TABLE github_signed_bodies (
  body_sha256  bytea       PRIMARY KEY,
  delivery_id  text        NOT NULL,
  first_seen   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX github_signed_bodies_first_seen ON github_signed_bodies (first_seen);
