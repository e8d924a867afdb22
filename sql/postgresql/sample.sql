-- The documents' sample schema: table usr and view view_usr (keyed by its pk_ column).
CREATE TABLE IF NOT EXISTS {{schema}}.usr (
    idu   INTEGER NOT NULL PRIMARY KEY,
    fname VARCHAR(64),
    lname CHAR(64),
    photo BYTEA
);

CREATE OR REPLACE VIEW {{schema}}.view_usr AS
    SELECT idu AS pk_empno, fname, lname FROM {{schema}}.usr;
