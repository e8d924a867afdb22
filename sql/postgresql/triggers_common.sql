-- Triggers both flavours share: a deleted row is a type-4 event; a changed key is a
-- different object, so the old one is deleted and the new one published whole by an
-- insert-row query-back event.
CREATE OR REPLACE FUNCTION {{schema}}.usr_log_row() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO {{schema}}.{{log_table}} (table_key, event_type, perpetrator, table_name)
    VALUES ('idu=' || OLD.idu, 4, session_user, 'usr');
    IF TG_OP = 'UPDATE' THEN
        INSERT INTO {{schema}}.{{log_table}} (table_key, event_type, perpetrator, table_name)
        VALUES ('idu=' || NEW.idu, 5, session_user, 'usr');
    END IF;
    RETURN NULL;
END
$fn$;

CREATE OR REPLACE TRIGGER usr_log_delete AFTER DELETE ON {{schema}}.usr
    FOR EACH ROW EXECUTE FUNCTION {{schema}}.usr_log_row();
CREATE OR REPLACE TRIGGER usr_log_rekey AFTER UPDATE ON {{schema}}.usr
    FOR EACH ROW WHEN (OLD.idu <> NEW.idu) EXECUTE FUNCTION {{schema}}.usr_log_row();
