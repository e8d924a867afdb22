-- The documents' sample schema: table usr and view view_usr (keyed by its pk_ column).
-- SQLite has no schemas: Schema Name still names the schema= of associations.
CREATE TABLE IF NOT EXISTS usr (
    idu   INTEGER NOT NULL PRIMARY KEY,
    fname VARCHAR(64),
    lname CHAR(64),
    photo BLOB
);

CREATE VIEW IF NOT EXISTS view_usr AS
    SELECT idu AS pk_empno, fname, lname FROM usr;
