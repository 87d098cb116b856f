-- A sealed decision counts once, in any run of its workflow (a `temporal workflow reset` re-delivers
-- updates and signals into a new run): the request row keeps what the seal was for (its decision and
-- the hold it answers), the seal itself, and the verdict it got, so that a retried check of the same
-- delivery gets the same verdict and any other delivery, in this run or another, is a replay.
ALTER TABLE decision_requests ADD COLUMN decision text;
ALTER TABLE decision_requests ADD COLUMN hold text;
ALTER TABLE decision_requests ADD COLUMN seal text;
ALTER TABLE decision_requests ADD COLUMN verdict jsonb;

-- The run that first recorded the event, as Temporal names the first run of its chain: a reset (or a
-- continue-as-new) starts a new run of the same chain, which carries on with the event; a run of a
-- new chain (a redelivery after Temporal's retention) finds it processed before.
ALTER TABLE events ADD COLUMN first_run_id text;
