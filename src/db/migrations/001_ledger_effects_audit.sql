-- The system of record that outlives Temporal's retention. No column holds message text in plaintext.

-- Event ledger: the second dedupe key after the workflow id; survives Temporal's retention.
CREATE TABLE events (
  provider        text        NOT NULL,
  event_id        text        NOT NULL,
  workflow_id     text        NOT NULL,
  run_id          text        NOT NULL,            -- tells our own retry from an earlier run of the same id
  event_type      text        NOT NULL,
  occurred_at     timestamptz,
  received_at     timestamptz NOT NULL DEFAULT now(),
  correlation_id  text,
  redelivery      jsonb,                 -- e.g. Slack retry num/reason, LINE isRedelivery
  payload_ref     text,                  -- a reference or ciphertext, never plaintext; purge clears it
  outcome         text,                  -- final ReplyState of the workflow, set when it ends
  outcome_reason  text,
  completed_at    timestamptz,
  PRIMARY KEY (provider, event_id)
);
CREATE INDEX events_received_at ON events (received_at);

-- Effects: one row per side effect (or per step of a multi-step effect), unique on its business key.
CREATE TABLE effects (
  id               uuid        PRIMARY KEY,          -- also the idempotency key sent to the target
  target           text        NOT NULL,
  business_key     text        NOT NULL,
  step             text        NOT NULL DEFAULT 'send',
  step_index       int         NOT NULL DEFAULT 0,
  integration      text        NOT NULL,
  conversation_id  text,
  status           text        NOT NULL CHECK (status IN
                     ('claimed','sending','retry_wait','unknown','held','succeeded','failed','discarded')),
  attempts         int         NOT NULL DEFAULT 0,
  lease_attempt    int,                               -- the send attempt that owns the 'sending' mark
  lease_expires_at timestamptz,                       -- after this, the owner must not write its request
  next_attempt_at  timestamptz,
  last_error_class text,
  last_error       text,                              -- a classified, redacted summary; never message text
  external_id      text,
  workflow_id      text        NOT NULL,
  correlation_id   text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  completed_at     timestamptz,
  UNIQUE (target, business_key)
);
CREATE INDEX effects_status ON effects (status);
CREATE INDEX effects_workflow ON effects (workflow_id);

-- Audit log of every operator decision, accepted or refused. Append-only: a trigger refuses changes.
CREATE TABLE audit_log (
  id            bigserial   PRIMARY KEY,
  at            timestamptz NOT NULL DEFAULT now(),
  actor         text        NOT NULL,
  approver      text,
  action        text        NOT NULL,
  workflow_id   text        NOT NULL,
  business_key  text,
  state_before  text,
  state_after   text,
  reason        text,
  result        text        NOT NULL,                 -- 'accepted' | 'rejected: <why>' | outcome detail
  request_id    text
);
CREATE INDEX audit_log_workflow ON audit_log (workflow_id);
CREATE INDEX audit_log_actor ON audit_log (actor, at);

CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only: % is not allowed', TG_OP;
END $$;
CREATE TRIGGER audit_log_no_update_delete BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

-- Events refused by the conversation state machine (late or disallowed), with the reason.
CREATE TABLE rejected_events (
  id               bigserial   PRIMARY KEY,
  provider         text        NOT NULL,
  event_id         text        NOT NULL,
  workflow_id      text        NOT NULL,
  conversation_id  text,
  compared_version text,
  current_state    text,
  current_version  text,
  reason           text        NOT NULL,
  decided_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX rejected_events_event ON rejected_events (provider, event_id);
