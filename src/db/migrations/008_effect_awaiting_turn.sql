-- A send that found an earlier one of its conversation pending, and whose workflow now waits to be
-- told (`yourTurn`): only such a send is signalled when the earlier one settles. A send still waiting
-- inside its attempt checks again by itself, and a signal would only cost both workflows a task.
ALTER TABLE effects ADD COLUMN awaiting_turn boolean NOT NULL DEFAULT false;
