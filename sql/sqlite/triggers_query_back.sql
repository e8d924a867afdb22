-- Triggers that log usr changes as row query-back events: 5 insert row, 6 update row,
-- 4 delete row. The publisher reads the current values when it publishes.
CREATE TRIGGER IF NOT EXISTS usr_log_insert AFTER INSERT ON usr
BEGIN
    INSERT INTO $log_table (table_key, event_type, table_name) VALUES ('idu=' || NEW.idu, 5, 'usr');
END;

CREATE TRIGGER IF NOT EXISTS usr_log_update AFTER UPDATE ON usr
WHEN OLD.idu = NEW.idu
BEGIN
    INSERT INTO $log_table (table_key, event_type, table_name) VALUES ('idu=' || NEW.idu, 6, 'usr');
END;

CREATE TRIGGER IF NOT EXISTS usr_log_rekey AFTER UPDATE OF idu ON usr
WHEN OLD.idu <> NEW.idu
BEGIN
    INSERT INTO $log_table (table_key, event_type, table_name) VALUES ('idu=' || OLD.idu, 4, 'usr');
    INSERT INTO $log_table (table_key, event_type, table_name) VALUES ('idu=' || NEW.idu, 5, 'usr');
END;

CREATE TRIGGER IF NOT EXISTS usr_log_delete AFTER DELETE ON usr
BEGIN
    INSERT INTO $log_table (table_key, event_type, table_name) VALUES ('idu=' || OLD.idu, 4, 'usr');
END;
