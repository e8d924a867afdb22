-- Triggers that log usr changes as row query-back events: 5 insert row, 6 update row
-- (deletes and key changes: triggers_common.sql). The publisher reads the current values
-- when it publishes.
CREATE TRIGGER IF NOT EXISTS usr_log_insert AFTER INSERT ON usr
BEGIN
    INSERT INTO {{log_table}} (table_key, event_type, table_name) VALUES ('idu=' || NEW.idu, 5, 'usr');
END;

CREATE TRIGGER IF NOT EXISTS usr_log_update AFTER UPDATE ON usr
WHEN OLD.idu = NEW.idu
BEGIN
    INSERT INTO {{log_table}} (table_key, event_type, table_name) VALUES ('idu=' || NEW.idu, 6, 'usr');
END;
