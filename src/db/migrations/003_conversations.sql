-- Business state per conversation (or order): late or disallowed events are judged against it,
-- not against their arrival time. `version` is the provider's occurrence time in microseconds.
CREATE TABLE conversations (
  id          text        PRIMARY KEY,             -- <provider>:<conversation id>
  machine     text        NOT NULL,                -- which state machine: chat | order
  state       text        NOT NULL,
  version     bigint      NOT NULL,
  last_event  text,                                 -- <provider>:<event id> that set the state
  updated_at  timestamptz NOT NULL DEFAULT now()
);
