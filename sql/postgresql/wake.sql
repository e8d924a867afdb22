-- The event log's wake-up trigger, made by `xdspub init-db --wake` (docs/event-log.md,
-- Per-database notes): a waiting `xdspub poll` starts a cycle as soon as rows are logged. One
-- notification a transaction, on the channel xdspub_<the event log's oid>, sent when the
-- transaction commits; the transaction-local setting spares a trigger that logs one row
-- at a time a notification each time. The trigger dropped is the one an earlier init-db
-- made, named after the event log.
CREATE OR REPLACE FUNCTION {{schema}}.{{wake_function}}() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    IF current_setting('xdspub.woken_' || TG_RELID, true) IS DISTINCT FROM 'y' THEN
        PERFORM set_config('xdspub.woken_' || TG_RELID, 'y', true);
        PERFORM pg_notify('xdspub_' || TG_RELID, '');
    END IF;
    RETURN NULL;
END
$fn$;
DROP TRIGGER IF EXISTS {{earlier_wake_trigger}} ON {{schema}}.{{log_table}};
CREATE OR REPLACE TRIGGER {{wake_trigger}} AFTER INSERT ON {{schema}}.{{log_table}}
    FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.{{wake_function}}();
