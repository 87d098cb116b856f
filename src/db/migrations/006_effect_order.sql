-- The order of sends within a conversation, kept with the effects themselves: a send waits only while
-- an earlier one of its conversation is still pending (claimed, sending, waiting to retry, or of
-- unknown outcome); held and failed never block. Rows of workflows started before this leave both
-- columns empty and are ordered by their conversation's turns workflow instead.
ALTER TABLE effects ADD COLUMN conversation_key text;
ALTER TABLE effects ADD COLUMN order_key text;
CREATE INDEX effects_conversation_pending ON effects (conversation_key, order_key, id)
  WHERE conversation_key IS NOT NULL AND status IN ('claimed', 'sending', 'retry_wait', 'unknown');
