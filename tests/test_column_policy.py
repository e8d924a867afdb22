"""Column policy (docs/parameters.md, Column policy): excluded columns appear nowhere (no
read names them, no document, state, report or log carries their values) and hashed ones
only as HMAC-SHA256 of their XDS text; a bad policy is a usage error; triggers made with
--exclude-columns never log them."""

from __future__ import annotations

import hashlib
import hmac
import logging
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from lxml import etree

from publisher.cli import cli
from publisher.source.database import connect
from tests.conftest import LOG_COLUMNS, SampleDb, canonical, make_sample_db

KEY = "pol-key-\u00e9"  # not ASCII: the key is taken as UTF-8
EXCLUDED = ("pol_person.Secret", "pol_alias.token")
HASHED = ("pol_person.ssn", "pol_person.pin", "pol_alias.alias")
# Every raw value of an excluded or hashed column the test writes: none may show anywhere.
RAW = {
    "excluded": ["xs-Secret-1", "xs-Secret-2", "xs-Secret-3", "xs-Secret-4", "xs-token-1", "xs-token-2"],
    "hashed": ["hs-ssn-1", "hs-ssn-2", "hs-ssn-3", "hs-ssn-4", "hs-alias-1", "hs-alias-2", "00987654321",
               "987654320", "hs-bad-pin"],
}


def hashed(text: str) -> str:
    return hmac.new(KEY.encode("utf-8"), text.encode("utf-8"), hashlib.sha256).hexdigest()


def _create(db: SampleDb) -> None:
    secret = db.engine.dialect.identifier_preparer.quote_identifier("Secret")
    db.execute(f"CREATE TABLE {db.table('pol_person')} (id INTEGER NOT NULL PRIMARY KEY, "
               f"name VARCHAR(40), {secret} VARCHAR(40), ssn VARCHAR(40), pin INTEGER)")
    db.execute(f"CREATE TABLE {db.table('pol_alias')} (id INTEGER NOT NULL, alias VARCHAR(40) NOT NULL, "
               f"token VARCHAR(40) NOT NULL, FOREIGN KEY (id) REFERENCES {db.table('pol_person')} (id))")


def _insert(db: SampleDb, person: int, name: str, secret: str, ssn: str, pin: int, alias: str, token: str) -> None:
    quoted = db.engine.dialect.identifier_preparer.quote_identifier("Secret")
    db.execute(f"INSERT INTO {db.table('pol_person')} (id, name, {quoted}, ssn, pin) VALUES (:i, :n, :x, :s, :p)",
               i=person, n=name, x=secret, s=ssn, p=pin)
    db.execute(f"INSERT INTO {db.table('pol_alias')} (id, alias, token) VALUES (:i, :a, :t)",
               i=person, a=alias, t=token)


def _url(db: SampleDb) -> str:
    return db.engine.url.render_as_string(hide_password=False)


def _export(db: SampleDb, out: Path, *more: str):
    args = ["export", "--db", _url(db), "--schema", db.schema, "--out", str(out),
            *(a for c in EXCLUDED for a in ("--exclude-columns", c)),
            "--hash-columns", ",".join(HASHED), *more]
    return CliRunner().invoke(cli, args, env={"XDSPUB_HASH_KEY": KEY}, catch_exceptions=False)


def _files_text(*paths: Path) -> bytes:
    """Every file's bytes: of a file, or of each file under a folder."""
    files = [p for path in paths for p in (sorted(path.rglob("*")) if path.is_dir() else [path])]
    return b"".join(p.read_bytes() for p in files if p.is_file())


def test_excluded_columns_appear_nowhere_and_hashed_ones_only_as_hashes(any_db, tmp_path, caplog):
    db = any_db
    _create(db)
    statements: list[str] = []

    def seen(_conn, _cursor, statement, *_args) -> None:
        statements.append(statement)

    caplog.set_level(logging.DEBUG)
    # Per-field events, as triggers made before the policy would log them.
    db.log(
        ("id=1", 1, "pol_person", "name", None, "Ann"),
        ("id=1", 1, "pol_person", "Secret", None, "xs-Secret-1"),
        ("id=1", 1, "pol_person", "ssn", None, "hs-ssn-1"),
        ("id=1", 1, "pol_person", "pin", None, "00987654321"),  # its XDS text: 987654321
        ("id=1", 1, "pol_alias", "alias", None, "hs-alias-1"),
        ("id=1", 1, "pol_alias", "token", None, "xs-token-1"),
        ("id=1", 2, "pol_person", "ssn", "hs-ssn-1", "hs-ssn-2"),
        ("id=1", 2, "pol_person", "Secret", "xs-Secret-1", "xs-Secret-2"),
        ("id=3", 1, "pol_person", "pin", None, "hs-bad-pin"),
    )
    # Query-back: a whole row (type 5) and a child table's attribute (type 8).
    _insert(db, 2, "Bob", "xs-Secret-3", "hs-ssn-3", 987654320, "hs-alias-2", "xs-token-2")
    db.log(("id=2", 5, "pol_person"), ("id=2", 8, "pol_person", "pol_alias.alias"))
    sa.event.listen(sa.engine.Engine, "before_cursor_execute", seen)
    try:
        logged = _export(db, tmp_path / "log.xml")
        # Triggerless: every object's state, then a change of a hashed and an excluded
        # column (the excluded one alone would publish nothing).
        state, first, second = tmp_path / "state", tmp_path / "tl1", tmp_path / "tl2"
        mode = ("--mode", "triggerless", "--state-dir", str(state))
        resynced = _export(db, first, *mode)
        quoted = db.engine.dialect.identifier_preparer.quote_identifier("Secret")
        db.execute(f"UPDATE {db.table('pol_person')} SET ssn = 'hs-ssn-4', {quoted} = 'xs-Secret-4' WHERE id = 2")
        changed = _export(db, second, *mode)
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", seen)

    assert logged.exit_code == 1, logged.output  # the bad pin
    assert "record_id 9: E: new_value (value of a hashed column) is not a valid int value" in logged.stderr
    assert "3 of them naming excluded columns" in logged.stderr
    assert resynced.exit_code == 0 and changed.exit_code == 0, resynced.output + changed.output
    assert db.statuses() == {**{r: "S" for r in range(1, 12)}, 9: "E"}
    # No statement names an excluded column (the catalogue's reflection aside).
    reads = [s for s in statements if s.lstrip().upper().startswith("SELECT") and ("pol_person" in s or "pol_alias" in s)]
    assert reads and not [s for s in reads if "Secret" in s or "token" in s]

    shown = (_files_text(tmp_path / "log.xml", first, second, state) + logged.output.encode()
             + resynced.output.encode() + changed.output.encode() + caplog.text.encode())
    for raw in RAW["excluded"] + RAW["hashed"]:
        assert raw.encode() not in shown, raw
    published = b"".join(p.read_bytes() for p in (tmp_path / "log.xml", *first.iterdir(), *second.iterdir()))
    for raw in ("hs-ssn-1", "hs-ssn-2", "hs-ssn-3", "hs-ssn-4", "hs-alias-1", "hs-alias-2", "987654321", "987654320"):
        assert hashed(raw).encode() in published, raw
    documents = [etree.parse(str(p)).getroot() for p in (tmp_path / "log.xml", *first.iterdir(), *second.iterdir())]
    attrs = {a.get("attr-name") for d in documents for a in d.iter("add-attr", "modify-attr")}
    assert attrs == {"name", "ssn", "pin", "pol_alias.alias"}
    assert {v.get("type") for d in documents for a in d.iter("add-attr", "modify-attr")
            if a.get("attr-name") != "name" for v in a.iter("value")} == {"string"}
    # The triggerless change: the hashed column's old hash out, its new one in.
    [modify] = etree.parse(str(next(second.iterdir()))).getroot().iter("modify")
    [ssn] = modify.iter("modify-attr")
    assert [v.text for v in ssn.iter("value")] == [hashed("hs-ssn-3"), hashed("hs-ssn-4")]


def test_the_spark_path_publishes_what_the_driver_does(spark, tmp_path):
    db = make_sample_db("sqlite", tmp_path)
    _create(db)
    _insert(db, 2, "Bob", "xs-Secret-3", "hs-ssn-3", 987654320, "hs-alias-2", "xs-token-2")
    db.log(("id=1", 1, "pol_person", "ssn", None, "hs-ssn-1"), ("id=1", 1, "pol_person", "Secret", None, "xs-Secret-1"),
           ("id=1", 1, "pol_alias", "alias", None, "hs-alias-1"), ("id=2", 5, "pol_person"))
    db.settings = replace(db.settings, exclude_columns=EXCLUDED, hash_columns=HASHED, hash_key=KEY)
    driver, _ = db.publish(tmp_path / "driver.xml", dry_run=True)
    on_spark, report = db.publish(tmp_path / "spark.xml", small_cycle_rows=0)
    assert report.on_spark and report.excluded == 1
    assert canonical(on_spark) == canonical(driver)
    text = (tmp_path / "spark.xml").read_bytes()
    assert hashed("hs-ssn-1").encode() in text and hashed("hs-alias-2").encode() in text
    assert not [raw for raw in RAW["excluded"] + RAW["hashed"] if raw.encode() in text]
    db.drop()


@pytest.fixture
def sample_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'sample.db'}"
    assert CliRunner().invoke(cli, ["init-db", "--db", url, "--sample"]).exit_code == 0
    return url


@pytest.mark.parametrize(
    ("options", "env", "message"),
    [
        (["--exclude-columns", "nosuch.fname"], {}, "--exclude-columns nosuch.fname: no table of that name"),
        (["--hash-columns", "usr.FName"], {"XDSPUB_HASH_KEY": "k"},
         "--hash-columns usr.FName: no such column in table usr (its columns: idu, fname, lname"),
        (["--exclude-columns", "usr.idu"], {}, "usr.idu: idu is a key column of usr"),
        (["--exclude-columns", "usr_phone.idu"], {}, "idu is a link column of the child table usr_phone"),
        (["--hash-columns", "usr.manager"], {"XDSPUB_HASH_KEY": "k"}, "a reference names an object"),
        (["--hash-columns", "usr.fname", "--exclude-columns", "usr.fname"], {"XDSPUB_HASH_KEY": "k"},
         "column usr.fname is both excluded and hashed"),
        (["--hash-columns", "usr.fname"], {}, "--hash-columns needs a key: set XDSPUB_HASH_KEY"),
        (["--hash-columns", "usr.fname", "--hash-key", "k"], {}, "No such option '--hash-key'"),
        (["--exclude-columns", "usr.fname", "--source", "qlik-ct", "--input", "-"], {},
         "--exclude-columns go with the database's tables, not --source FORMAT"),
    ],
)
def test_a_bad_policy_is_a_usage_error_that_names_it(sample_url, tmp_path, options, env, message):
    out = tmp_path / "out.xml"
    result = CliRunner().invoke(cli, ["export", "--db", sample_url, "--out", str(out), *options], env=env)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not out.exists()


def test_the_key_comes_from_the_config_file_and_the_variable_wins(sample_url, tmp_path):
    config = tmp_path / "xdspub.toml"
    config.write_text('hash_key = "from-file"\nhash-columns = "usr.fname"\n')
    engine, _ = connect(sample_url)  # the triggers call base64(), registered on xdspub's connections
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO usr (idu, fname) VALUES (1, 'Jack')"))
    engine.dispose()
    texts = []
    for env in ({}, {"XDSPUB_HASH_KEY": "from-env"}):
        out = tmp_path / f"out{len(texts)}.xml"
        result = CliRunner().invoke(cli, ["export", "--config", str(config), "--db", sample_url, "--out", str(out),
                                          "--dry-run"], env=env)
        assert result.exit_code == 0, result.output
        texts.append(etree.parse(str(out)).findtext(".//add-attr[@attr-name='fname']/value"))
    assert texts == [hmac.new(key, b"Jack", hashlib.sha256).hexdigest() for key in (b"from-file", b"from-env")]


def test_a_views_attributes_take_the_policy_by_their_attribute_names(sample_db, tmp_path):
    """view_usr (docs/classes.md, Views in the driver's form): sv_lname is excluded as
    view_usr.lname, also where an event names the view column; mv_phoneno hashed as
    view_usr.phoneno."""
    sample_db.add_user(5, "Ann", "xs-lname", None)
    sample_db.execute("INSERT INTO usr_phone (idu, phoneno) VALUES (5, 'hs-phone')")
    sample_db.log(("pk_empno=5", 6, "view_usr"), ("pk_empno=5", 1, "view_usr", "sv_lname", None, "xs-new"))
    out = tmp_path / "view.xml"
    result = CliRunner().invoke(cli, ["export", "--db", _url(sample_db), "--out", str(out), "--exclude-columns",
                                      "view_usr.lname", "--hash-columns", "view_usr.phoneno"],
                                env={"XDSPUB_HASH_KEY": KEY})
    assert result.exit_code == 0, result.output
    assert "(1 of them naming excluded columns)" in result.output
    text = out.read_text()
    assert "xs-" not in text and "hs-phone" not in text and 'attr-name="lname"' not in text
    assert etree.parse(str(out)).findtext(".//modify-attr[@attr-name='phoneno']//value") == hashed("hs-phone")


def _logged(db: SampleDb) -> list[tuple]:
    with db.engine.connect() as conn:
        rows = conn.execute(sa.text(f"SELECT {', '.join(LOG_COLUMNS)} FROM {db.table('indirect_process')} "
                                    "ORDER BY record_id"))
        return [(r[0], int(r[1]), *r[2:]) for r in rows]


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_triggers_made_with_excluded_columns_never_log_them(kind, tmp_path):
    db = make_sample_db(kind, tmp_path)
    try:
        _create(db)
        quoted = db.engine.dialect.identifier_preparer.quote_identifier("Secret")
        logged = {}
        for flavour in ("field", "query-back"):
            result = CliRunner().invoke(cli, ["triggers", "--db", _url(db), "--schema", db.schema,
                                              "--table", "pol_person", "--table", "pol_alias", "--flavour",
                                              flavour, "--exclude-columns", ",".join(EXCLUDED), "--install"])
            assert result.exit_code == 0, result.output
            person = 10 if flavour == "field" else 20
            _insert(db, person, "Ann", "xs-Secret-1", "hs-ssn-1", 1, "a", "xs-token-1")
            db.execute(f"UPDATE {db.table('pol_person')} SET {quoted} = 'xs-Secret-2' WHERE id = {person}")
            db.execute(f"UPDATE {db.table('pol_alias')} SET token = 'xs-token-2' WHERE id = {person}")
            db.execute(f"UPDATE {db.table('pol_person')} SET name = 'Anna' WHERE id = {person}")
            logged[flavour] = [row for row in _logged(db) if row[0] == f"id={person}"]
    finally:
        db.drop()
    assert logged["field"] == [
        ("id=10", 1, "pol_person", "name", None, "Ann"),
        ("id=10", 1, "pol_person", "ssn", None, "hs-ssn-1"),
        ("id=10", 1, "pol_person", "pin", None, "1"),
        ("id=10", 1, "pol_person", "pol_alias.alias", None, "a"),
        ("id=10", 2, "pol_person", "name", "Ann", "Anna"),
    ]
    # A change of an excluded column alone logs no query-back either.
    assert logged["query-back"] == [
        ("id=20", 5, "pol_person", None, None, None),
        ("id=20", 8, "pol_person", "pol_alias.alias", None, None),
        ("id=20", 6, "pol_person", None, None, None),
    ]
