-- Triggers that log usr changes as row query-back events: 5 insert row, 6 update row
-- (deletes and key changes: triggers_common.sql). The publisher reads the current values
-- when it publishes.
CREATE OR REPLACE FUNCTION {{schema}}.usr_log_query_back() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO {{schema}}.{{log_table}} (table_key, event_type, perpetrator, table_name)
    VALUES ('idu=' || NEW.idu, CASE TG_OP WHEN 'INSERT' THEN 5 ELSE 6 END, session_user, 'usr');
    RETURN NULL;
END
$fn$;

CREATE OR REPLACE TRIGGER usr_log_insert AFTER INSERT ON {{schema}}.usr
    FOR EACH ROW EXECUTE FUNCTION {{schema}}.usr_log_query_back();
CREATE OR REPLACE TRIGGER usr_log_update AFTER UPDATE ON {{schema}}.usr
    FOR EACH ROW WHEN (OLD.idu = NEW.idu) EXECUTE FUNCTION {{schema}}.usr_log_query_back();
