-- Triggers that log usr changes as per-field events: 1 insert field, 2 update field
-- (deletes and key changes: triggers_common.sql). Binary values are Base64 on one line.
CREATE OR REPLACE FUNCTION {{schema}}.usr_log_field() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO {{schema}}.{{log_table}}
            (table_key, event_type, perpetrator, table_name, column_name, new_value)
        SELECT 'idu=' || NEW.idu, 1, session_user, 'usr', f.c, f.v
        FROM (VALUES ('fname', NEW.fname::text),
                     ('lname', NEW.lname::text),
                     ('photo', translate(encode(NEW.photo, 'base64'), E'\n', ''))) AS f (c, v)
        WHERE f.v IS NOT NULL;
    ELSE
        INSERT INTO {{schema}}.{{log_table}}
            (table_key, event_type, perpetrator, table_name, column_name, old_value, new_value)
        SELECT 'idu=' || NEW.idu, 2, session_user, 'usr', f.c, f.o, f.n
        FROM (VALUES ('fname', OLD.fname::text, NEW.fname::text),
                     ('lname', OLD.lname::text, NEW.lname::text),
                     ('photo', translate(encode(OLD.photo, 'base64'), E'\n', ''),
                               translate(encode(NEW.photo, 'base64'), E'\n', ''))) AS f (c, o, n)
        WHERE f.o IS DISTINCT FROM f.n;
    END IF;
    RETURN NULL;
END
$fn$;

CREATE OR REPLACE TRIGGER usr_log_insert AFTER INSERT ON {{schema}}.usr
    FOR EACH ROW EXECUTE FUNCTION {{schema}}.usr_log_field();
CREATE OR REPLACE TRIGGER usr_log_update AFTER UPDATE ON {{schema}}.usr
    FOR EACH ROW WHEN (OLD.idu = NEW.idu) EXECUTE FUNCTION {{schema}}.usr_log_field();
