-- Alerts the worker delivered (held, failed, reminders), so that `replyflow reconcile` can find held
-- work nobody was told about. Identifiers only, like the alerts themselves.
CREATE TABLE alerts (
  id            bigserial   PRIMARY KEY,
  at            timestamptz NOT NULL DEFAULT now(),
  kind          text        NOT NULL,            -- held | failed | reminder
  level         int         NOT NULL DEFAULT 0,  -- 0 for the first alert, then one more per reminder
  workflow_id   text        NOT NULL,
  business_key  text
);
CREATE INDEX alerts_workflow ON alerts (workflow_id, kind);
