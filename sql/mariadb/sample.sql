-- The documents' sample schema: table usr and view view_usr (class usr in the driver's
-- form, below), and the logical class usr (docs/classes.md): usr.manager a reference to another usr, the
-- child tables usr_phone (multi-valued usr_phone.phoneno) and usr_mbr_of (multi-valued
-- reference usr_mbr_of.idg to class grp). Their triggers: `xdspub triggers`. InnoDB
-- indexes each foreign key itself.
CREATE TABLE IF NOT EXISTS {{schema}}.usr (
    idu     INTEGER NOT NULL PRIMARY KEY,
    fname   VARCHAR(64),
    lname   CHAR(64),
    photo   BLOB,
    manager INTEGER,
    FOREIGN KEY (manager) REFERENCES {{schema}}.usr (idu)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

CREATE TABLE IF NOT EXISTS {{schema}}.grp (
    idg   INTEGER NOT NULL PRIMARY KEY,
    gname VARCHAR(64)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

CREATE TABLE IF NOT EXISTS {{schema}}.usr_phone (
    idu     INTEGER NOT NULL,
    phoneno VARCHAR(32) NOT NULL,
    FOREIGN KEY (idu) REFERENCES {{schema}}.usr (idu) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

CREATE TABLE IF NOT EXISTS {{schema}}.usr_mbr_of (
    idu INTEGER NOT NULL,
    idg INTEGER NOT NULL,
    FOREIGN KEY (idu) REFERENCES {{schema}}.usr (idu) ON DELETE CASCADE,
    FOREIGN KEY (idg) REFERENCES {{schema}}.grp (idg) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- view_usr: class usr declared the driver's way (docs/classes.md, Views in the driver's
-- form): pk_ its key, sv_ single-valued, mv_ multi-valued (a row a value, the values of
-- both mv_ columns crossed), fk_ references to the class keyed by the column named.
-- Replaced at each run: a view holds no data.
DROP VIEW IF EXISTS {{schema}}.view_usr;
CREATE VIEW {{schema}}.view_usr AS
    SELECT u.idu AS pk_empno, u.fname AS sv_fname, u.lname AS sv_lname, u.photo AS sv_photo,
           u.manager AS fk_sv__idu__manager, m.idg AS fk_mv__idg__mbr_of, p.phoneno AS mv_phoneno
    FROM {{schema}}.usr u
    LEFT JOIN {{schema}}.usr_mbr_of m ON m.idu = u.idu
    LEFT JOIN {{schema}}.usr_phone p ON p.idu = u.idu;
