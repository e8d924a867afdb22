-- Triggers that log usr changes as per-field events: 1 insert field, 2 update field
-- (deletes and key changes: triggers_common.sql). Binary values are written Base64-encoded:
-- base64() is the function the xdspub connection registers (SQLite has none of its own).
CREATE TRIGGER IF NOT EXISTS usr_log_insert AFTER INSERT ON usr
BEGIN
    INSERT INTO {{log_table}} (table_key, event_type, table_name, column_name, new_value)
    SELECT 'idu=' || NEW.idu, 1, 'usr', 'fname', NEW.fname WHERE NEW.fname IS NOT NULL
    UNION ALL
    SELECT 'idu=' || NEW.idu, 1, 'usr', 'lname', NEW.lname WHERE NEW.lname IS NOT NULL
    UNION ALL
    SELECT 'idu=' || NEW.idu, 1, 'usr', 'photo', base64(NEW.photo) WHERE NEW.photo IS NOT NULL;
END;

CREATE TRIGGER IF NOT EXISTS usr_log_update AFTER UPDATE ON usr
WHEN OLD.idu = NEW.idu
BEGIN
    INSERT INTO {{log_table}} (table_key, event_type, table_name, column_name, old_value, new_value)
    SELECT 'idu=' || NEW.idu, 2, 'usr', 'fname', OLD.fname, NEW.fname
        WHERE OLD.fname IS NOT NEW.fname
    UNION ALL
    SELECT 'idu=' || NEW.idu, 2, 'usr', 'lname', OLD.lname, NEW.lname
        WHERE OLD.lname IS NOT NEW.lname
    UNION ALL
    SELECT 'idu=' || NEW.idu, 2, 'usr', 'photo', base64(OLD.photo), base64(NEW.photo)
        WHERE OLD.photo IS NOT NEW.photo;
END;
