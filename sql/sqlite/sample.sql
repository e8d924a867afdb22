-- The documents' sample schema: table usr and view view_usr (keyed by its pk_ column), and
-- the logical class usr (docs/classes.md): usr.manager a reference to another usr, the
-- child tables usr_phone (multi-valued usr_phone.phoneno) and usr_mbr_of (multi-valued
-- reference usr_mbr_of.idg to class grp). Their triggers: `xdspub triggers`.
-- SQLite has no schemas: Schema Name still names the schema= of associations.
CREATE TABLE IF NOT EXISTS usr (
    idu     INTEGER NOT NULL PRIMARY KEY,
    fname   VARCHAR(64),
    lname   CHAR(64),
    photo   BLOB,
    manager INTEGER,
    FOREIGN KEY (manager) REFERENCES usr (idu)
);
-- Every reference column is indexed: a delete of a usr or grp looks up the rows that
-- name it.
CREATE INDEX IF NOT EXISTS usr_manager ON usr (manager);

CREATE TABLE IF NOT EXISTS grp (
    idg   INTEGER NOT NULL PRIMARY KEY,
    gname VARCHAR(64)
);

CREATE TABLE IF NOT EXISTS usr_phone (
    idu     INTEGER NOT NULL,
    phoneno VARCHAR(32) NOT NULL,
    FOREIGN KEY (idu) REFERENCES usr (idu) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS usr_phone_idu ON usr_phone (idu);

CREATE TABLE IF NOT EXISTS usr_mbr_of (
    idu INTEGER NOT NULL,
    idg INTEGER NOT NULL,
    FOREIGN KEY (idu) REFERENCES usr (idu) ON DELETE CASCADE,
    FOREIGN KEY (idg) REFERENCES grp (idg) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS usr_mbr_of_idu ON usr_mbr_of (idu);
CREATE INDEX IF NOT EXISTS usr_mbr_of_idg ON usr_mbr_of (idg);

CREATE VIEW IF NOT EXISTS view_usr AS
    SELECT idu AS pk_empno, fname, lname FROM usr;
