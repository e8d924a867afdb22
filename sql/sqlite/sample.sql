-- The documents' sample schema: table usr and view view_usr (class usr in the driver's
-- form, below), and the logical class usr (docs/classes.md): usr.manager a reference to another usr, the
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

-- view_usr: class usr declared the driver's way (docs/classes.md, Views in the driver's
-- form): pk_ its key, sv_ single-valued, mv_ multi-valued (a row a value, the values of
-- both mv_ columns crossed), fk_ references to the class keyed by the column named.
-- Replaced at each run: a view holds no data.
DROP VIEW IF EXISTS view_usr;
CREATE VIEW view_usr AS
    SELECT u.idu AS pk_empno, u.fname AS sv_fname, u.lname AS sv_lname, u.photo AS sv_photo,
           u.manager AS fk_sv__idu__manager, m.idg AS fk_mv__idg__mbr_of, p.phoneno AS mv_phoneno
    FROM usr u
    LEFT JOIN usr_mbr_of m ON m.idu = u.idu
    LEFT JOIN usr_phone p ON p.idu = u.idu;
