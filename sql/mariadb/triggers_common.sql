-- Triggers both flavours share: a deleted row is a type-4 event; a changed key is a
-- different object, so the old one is deleted and the new one published whole by an
-- insert-row query-back event.
CREATE OR REPLACE TRIGGER {{schema}}.usr_log_delete AFTER DELETE ON {{schema}}.usr
FOR EACH ROW
    INSERT INTO {{schema}}.{{log_table}} (table_key, event_type, perpetrator, table_name)
    VALUES (CONCAT('idu=', OLD.idu), 4, SUBSTRING_INDEX(USER(), '@', 1), 'usr');

CREATE OR REPLACE TRIGGER {{schema}}.usr_log_rekey AFTER UPDATE ON {{schema}}.usr
FOR EACH ROW
    INSERT INTO {{schema}}.{{log_table}} (table_key, event_type, perpetrator, table_name)
    SELECT CONCAT('idu=', t.k), t.e, SUBSTRING_INDEX(USER(), '@', 1), 'usr'
    FROM (SELECT OLD.idu AS k, 4 AS e UNION ALL SELECT NEW.idu, 5) AS t
    WHERE OLD.idu <> NEW.idu;
