-- The sandbox target's own storage: the demo chat's messages and the bot's replies, with the
-- idempotency key that makes a resend of the same reply a replay instead of a second message.
CREATE TABLE sandbox_messages (
  id               bigserial   PRIMARY KEY,
  conversation_id  text        NOT NULL,
  author           text        NOT NULL CHECK (author IN ('user','bot')),
  text             text        NOT NULL,    -- the demo's own chat text, shown back on the sandbox page
  idempotency_key  text        UNIQUE,      -- bot replies only
  reference        text,                    -- the effect id the reply answers (lookup by reference)
  created_at       timestamptz NOT NULL DEFAULT now(),
  visible_at       timestamptz NOT NULL DEFAULT now()  -- lookups see the reply only from then (consistency delay)
);
CREATE INDEX sandbox_messages_conversation ON sandbox_messages (conversation_id, id);

-- Faults an operator of the demo arms for the next send to a conversation (sandbox page switches).
CREATE TABLE sandbox_faults (
  conversation_id  text        PRIMARY KEY,
  fault            text        NOT NULL,
  armed_at         timestamptz NOT NULL DEFAULT now()
);
