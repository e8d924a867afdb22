-- The publisher lock (docs/delivery.md, One publisher per event log): a publisher holds
-- a lock on this row (an UPDATE that changes nothing, left uncommitted), which needs
-- UPDATE on the table. init-db makes it only where it is missing (its row is locked while
-- a publisher runs).
CREATE TABLE {{schema}}.{{lock_table}} (
    id TINYINT NOT NULL PRIMARY KEY
) ENGINE = InnoDB;
INSERT INTO {{schema}}.{{lock_table}} (id) VALUES (1);
