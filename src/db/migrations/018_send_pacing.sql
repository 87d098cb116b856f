-- When the next request to a paced destination may go (a Slack channel: about one message a second;
-- a GitHub account's content-creating requests: one a second). Each send reserves the next free slot
-- in one statement, so that workers pace together instead of each learning the limit from a 429. One
-- row per destination ever paced; rows long in the past are pruned as sends come.
CREATE TABLE send_pacing (
  key      text        PRIMARY KEY,
  next_at  timestamptz NOT NULL
);
CREATE INDEX send_pacing_next_at ON send_pacing (next_at);
