-- The publisher lock (docs/delivery.md, One publisher per event log): a publisher holds
-- LOCK TABLE ... IN EXCLUSIVE MODE on this view, which needs UPDATE on it. A view has no
-- storage, so the lock keeps no VACUUM waiting. init-db makes it only where it is missing
-- (replacing it would wait on a running publisher's lock while holding up the triggers),
-- and gives it the event log's owner.
CREATE VIEW {{schema}}.{{lock_table}} AS SELECT 1 AS held;
REVOKE ALL ON {{schema}}.{{lock_table}} FROM PUBLIC;
