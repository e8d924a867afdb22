-- Triggers that log usr changes as row query-back events: 5 insert row, 6 update row
-- (deletes and key changes: triggers_common.sql). The publisher reads the current values
-- when it publishes.
CREATE OR REPLACE TRIGGER {{schema}}.usr_log_insert AFTER INSERT ON {{schema}}.usr
FOR EACH ROW
    INSERT INTO {{schema}}.{{log_table}} (table_key, event_type, perpetrator, table_name)
    VALUES (CONCAT('idu=', NEW.idu), 5, SUBSTRING_INDEX(USER(), '@', 1), 'usr');

CREATE OR REPLACE TRIGGER {{schema}}.usr_log_update AFTER UPDATE ON {{schema}}.usr
FOR EACH ROW
    INSERT INTO {{schema}}.{{log_table}} (table_key, event_type, perpetrator, table_name)
    SELECT CONCAT('idu=', NEW.idu), 6, SUBSTRING_INDEX(USER(), '@', 1), 'usr'
    FROM DUAL WHERE OLD.idu = NEW.idu;
