-- A responder may choose not to reply: the effect row it was claimed for is then `skipped`, settled
-- with nothing sent, so that it holds no later send of its conversation back and is never resent.
ALTER TABLE effects DROP CONSTRAINT effects_status_check;
ALTER TABLE effects ADD CONSTRAINT effects_status_check CHECK (status IN
  ('claimed','sending','retry_wait','unknown','held','succeeded','failed','discarded','skipped'));
