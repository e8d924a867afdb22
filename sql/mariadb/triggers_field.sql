-- Triggers that log usr changes as per-field events: 1 insert field, 2 update field
-- (deletes and key changes: triggers_common.sql). Binary values are Base64 on one line.
CREATE OR REPLACE TRIGGER {{schema}}.usr_log_insert AFTER INSERT ON {{schema}}.usr
FOR EACH ROW
    INSERT INTO {{schema}}.{{log_table}}
        (table_key, event_type, perpetrator, table_name, column_name, new_value)
    SELECT CONCAT('idu=', NEW.idu), 1, SUBSTRING_INDEX(USER(), '@', 1), 'usr', f.c, f.v
    FROM (SELECT 'fname' AS c, NEW.fname AS v
          UNION ALL SELECT 'lname', NEW.lname
          UNION ALL SELECT 'photo', REPLACE(TO_BASE64(NEW.photo), '\n', '')) AS f
    WHERE f.v IS NOT NULL;

CREATE OR REPLACE TRIGGER {{schema}}.usr_log_update AFTER UPDATE ON {{schema}}.usr
FOR EACH ROW
    INSERT INTO {{schema}}.{{log_table}}
        (table_key, event_type, perpetrator, table_name, column_name, old_value, new_value)
    SELECT CONCAT('idu=', NEW.idu), 2, SUBSTRING_INDEX(USER(), '@', 1), 'usr', f.c, f.o, f.n
    FROM (SELECT 'fname' AS c, OLD.fname AS o, NEW.fname AS n
          UNION ALL SELECT 'lname', OLD.lname, NEW.lname
          UNION ALL SELECT 'photo', REPLACE(TO_BASE64(OLD.photo), '\n', ''),
                                    REPLACE(TO_BASE64(NEW.photo), '\n', '')) AS f
    WHERE OLD.idu = NEW.idu AND NOT (f.o <=> f.n);
