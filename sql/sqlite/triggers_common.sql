-- Triggers both flavours share: a deleted row is a type-4 event; a changed key is a
-- different object, so the old one is deleted and the new one published whole by an
-- insert-row query-back event.
CREATE TRIGGER IF NOT EXISTS usr_log_rekey AFTER UPDATE OF idu ON usr
WHEN OLD.idu <> NEW.idu
BEGIN
    INSERT INTO {{log_table}} (table_key, event_type, table_name) VALUES ('idu=' || OLD.idu, 4, 'usr');
    INSERT INTO {{log_table}} (table_key, event_type, table_name) VALUES ('idu=' || NEW.idu, 5, 'usr');
END;

CREATE TRIGGER IF NOT EXISTS usr_log_delete AFTER DELETE ON usr
BEGIN
    INSERT INTO {{log_table}} (table_key, event_type, table_name) VALUES ('idu=' || OLD.idu, 4, 'usr');
END;
