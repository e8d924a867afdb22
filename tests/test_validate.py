"""The shipped XDS schema and `xdspub validate` (docs/validation.md): what xdspub writes is
valid, what the DTD's content models refuse is a problem with its file, line and element,
and the command's exit codes."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from lxml import etree

from publisher.cli import cli
from publisher.delivery.documents import write_stream
from publisher.render.validate import (
    Problem,
    documents,
    validate_bytes,
    validate_file,
    validate_paths,
)
from publisher.render.xds import heartbeat_xml

CONFORMANCE = sorted((Path(__file__).parent / "conformance").glob("*.xml"))

# The commands of docs/rendering.md and docs/classes.md as xdspub indents them in <input>:
# an add, a field modify, a query-back modify, a delete, then a multi-valued attribute
# and references.
COMMANDS = b"""\
    <add class-name="usr" event-id="1">
      <association>idu=1,table=usr,schema=indirect</association>
      <add-attr attr-name="fname">
        <value type="string">Jack</value>
      </add-attr>
      <add-attr attr-name="photo">
        <value type="octet">qqo=</value>
      </add-attr>
    </add>
    <modify class-name="usr" event-id="2">
      <association>idu=1,table=usr,schema=indirect</association>
      <modify-attr attr-name="fname">
        <remove-value>
          <value type="string">Jack</value>
        </remove-value>
        <add-value>
          <value type="string">John</value>
        </add-value>
      </modify-attr>
      <modify-attr attr-name="lname">
        <remove-all-values/>
      </modify-attr>
    </modify>
    <delete class-name="usr" event-id="3">
      <association>idu=2,table=usr,schema=indirect</association>
    </delete>
    <add class-name="usr" event-id="4">
      <association>idu=3,table=usr,schema=indirect</association>
      <add-attr attr-name="usr_phone.phoneno">
        <value type="string">555-1</value>
        <value type="string">555-2</value>
      </add-attr>
      <add-attr attr-name="usr_mbr_of.idg">
        <value association-ref="idg=7,table=grp,schema=indirect" type="dn">idg=7,table=grp,schema=indirect</value>
      </add-attr>
    </add>
    <modify class-name="usr" event-id="5">
      <association>idu=3,table=usr,schema=indirect</association>
      <modify-attr attr-name="usr_phone.phoneno">
        <remove-value>
          <value type="string">555-1</value>
        </remove-value>
        <add-value>
          <value type="string">555-3</value>
          <value type="string">555-4</value>
        </add-value>
        <remove-all-values/>
        <add-value>
          <value type="string">555-5</value>
        </add-value>
      </modify-attr>
      <modify-attr attr-name="manager">
        <remove-all-values/>
        <add-value>
          <value association-ref="idu=1,table=usr,schema=indirect" type="dn">idu=1,table=usr,schema=indirect</value>
        </add-value>
      </modify-attr>
    </modify>
"""


def document(*commands: bytes) -> bytes:
    """A whole document as xdspub writes it: the shipped envelope around ``commands``."""
    stream = io.BytesIO()
    write_stream(stream, commands)
    return stream.getvalue()


def broken(old: bytes, new: bytes) -> tuple[bytes, int]:
    """The valid document with its first ``old`` replaced by ``new``, and the line where."""
    assert old in COMMANDS, old
    head = document().split(b"  </input>")[0]
    line = (head + COMMANDS[: COMMANDS.index(old)]).count(b"\n") + 1
    return document(COMMANDS.replace(old, new, 1)), line


def line_of(data: bytes, text: bytes) -> int:
    return data[: data.index(text)].count(b"\n") + 1


# --- valid -----------------------------------------------------------------------------


def test_xdspub_documents_are_valid() -> None:
    assert validate_bytes(document(COMMANDS), "doc.xml") == []


def test_an_empty_document_and_a_heartbeat_are_valid() -> None:
    assert validate_bytes(document(), "empty.xml") == []
    assert validate_bytes(document(heartbeat_xml()), "heartbeat.xml") == []


@pytest.mark.parametrize("case", CONFORMANCE, ids=[c.stem for c in CONFORMANCE])
def test_the_conformance_examples_are_valid(case: Path) -> None:
    """The documented examples (Tables 5-16 to 5-20 of the driver's guide) and those of
    docs/classes.md, in the envelope xdspub sends them in: a file holds one command, or
    several in <input>."""
    root = etree.fromstring(case.read_bytes())
    commands = list(root) if root.tag == "input" else [root]
    data = document(*(etree.tostring(c, with_tail=False) for c in commands))
    assert validate_bytes(data, case.name) == []


# --- invalid ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "element"),
    [
        # modify (association, modify-attr+)
        (b"<association>idu=1,table=usr,schema=indirect</association>\n      <modify-attr",
         b"<modify-attr", "modify-attr"),
        # delete (association)
        (b'<delete class-name="usr" event-id="3">\n      <association>idu=2,table=usr,schema=indirect</association>',
         b'<delete class-name="usr" event-id="3">', "delete"),
        # add-attr (value+)
        (b'<add-attr attr-name="fname">\n        <value type="string">Jack</value>\n      </add-attr>',
         b'<add-attr attr-name="fname"/>', "add-attr"),
        # add-value (value+)
        (b'<add-value>\n          <value type="string">John</value>\n        </add-value>',
         b"<add-value/>", "add-value"),
        # remove-all-values is empty
        (b"<remove-all-values/>", b"<remove-all-values><value>x</value></remove-all-values>",
         "value"),
        # value's type is one of the DTD's
        (b'<value type="string">Jack</value>', b'<value type="text">Jack</value>', "value"),
        # and nothing but text (or a structured value's components)
        (b'<value type="string">Jack</value>', b'<value type="string">J<b/>ack</value>', "value"),
        # an attribute the DTD does not know
        (b'<delete class-name="usr" event-id="3">', b'<delete class-name="usr" colour="red">', "delete"),
        # add's class-name is required
        (b'<add class-name="usr" event-id="1">', b'<add event-id="1">', "add"),
        # modify-attr's attr-name is required
        (b'<modify-attr attr-name="lname">', b"<modify-attr>", "modify-attr"),
        # a command the schema does not have
        (b'<delete class-name="usr" event-id="3">\n      <association>idu=2,table=usr,schema=indirect</association>\n    </delete>',
         b"<rename/>", "rename"),
    ],
    ids=["modify-without-association", "delete-without-association", "add-attr-without-value",
         "add-value-without-value", "remove-all-values-not-empty", "unknown-value-type",
         "markup-in-value", "unknown-attribute", "add-without-class-name",
         "modify-attr-without-attr-name", "unknown-command"],
)
def test_what_the_dtd_refuses_is_a_problem_at_its_line(old: bytes, new: bytes, element: str) -> None:
    data, line = broken(old, new)
    problems = validate_bytes(data, "bad.xml")
    assert problems, data.decode()
    assert ("bad.xml", line, element) in [(p.file, p.line, p.element) for p in problems], problems
    assert all(p.reason for p in problems)
    assert str(problems[0]).startswith(f"bad.xml:{problems[0].line}: <{problems[0].element}>: ")
    assert [p.line for p in problems] == sorted(p.line for p in problems)


def test_a_status_level_is_one_of_five() -> None:
    data = document(b'    <status level="info"/>\n')
    problems = validate_bytes(data, "s.xml")
    assert [(p.line, p.element) for p in problems] == [(line_of(data, b"<status"), "status")]
    for level in ("success", "warning", "error", "retry", "fatal"):
        assert validate_bytes(document(f'<status level="{level}">text</status>'.encode()), "s") == []


def test_the_envelope_is_checked_too() -> None:
    assert [p.element for p in validate_bytes(b"<nds><input/></nds>", "n.xml")] == ["nds"]
    assert [p.element for p in validate_bytes(b'<xds dtdversion="4.0"><input/></xds>', "n")] == ["xds"]
    assert validate_bytes(b'<nds dtdversion="4.0"><input/></nds>', "n") == []


def test_a_document_that_is_not_well_formed_is_a_problem_at_its_line() -> None:
    data = document(COMMANDS).replace(b"</delete>", b"</remove>")
    (problem,) = validate_bytes(data, "cut.xml")
    assert problem.element is None
    assert problem.line == line_of(data, b"</remove>")
    assert str(problem).startswith(f"cut.xml:{problem.line}: not well-formed XML: ")
    (empty,) = validate_bytes(b"", "empty.xml")
    assert empty.element is None and empty.line == 1


def with_doctype(doctype: str, association: str = "idu=1") -> bytes:
    """A valid document but for the DOCTYPE (line 3, after a comment that looks like one)
    and the text of its <association> (line 6)."""
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<!-- <!DOCTYPE nds> -->\n{doctype}\n'
        '<nds dtdversion="4.0">\n<input><delete class-name="usr">\n'
        f"<association>{association}</association></delete></input>\n</nds>\n"
    ).encode()


def test_a_doctype_is_refused_at_its_line() -> None:
    valid = with_doctype("<!-- no DOCTYPE -->")
    assert validate_bytes(valid, "v.xml") == []
    data = with_doctype("<!DOCTYPE nds>")
    assert [str(p) for p in validate_bytes(data, "d.xml")] == [
        "d.xml:3: <!DOCTYPE>: a DOCTYPE is not allowed: its DTD and entities are never read or expanded"
    ]
    utf16 = data.decode().replace("UTF-8", "UTF-16").encode("utf-16")
    assert [(p.line, p.element) for p in validate_bytes(utf16, "u.xml")] == [(0, "!DOCTYPE")]


def test_an_internal_entity_is_a_problem() -> None:
    data = with_doctype('<!DOCTYPE nds [<!ENTITY key "idu=1">]>', association="&key;")
    assert [(p.line, p.element) for p in validate_bytes(data, "e.xml")] == [(3, "!DOCTYPE")]


@pytest.mark.not_xds("laughs.xml")
def test_a_billion_laughs_is_refused_unexpanded(tmp_path: Path) -> None:
    laughs = ['<!ENTITY lol0 "lol">'] + [
        f'<!ENTITY lol{n} "{f"&lol{n - 1};" * 10}">' for n in range(1, 10)
    ]
    data = with_doctype(f"<!DOCTYPE nds [\n{chr(10).join(laughs)}\n]>", association="&lol9;")
    (tmp_path / "laughs.xml").write_bytes(data)
    for problems in (validate_bytes(data, "laughs.xml"), validate_file(tmp_path / "laughs.xml")):
        assert [(p.line, p.element) for p in problems] == [(3, "!DOCTYPE")]


@pytest.mark.not_xds("*.xml")
def test_an_external_entity_or_dtd_is_never_opened(tmp_path: Path) -> None:
    """Each document names a FIFO no one writes to: opening it would block the validator
    (the subprocess's timeout only guards against that hang)."""
    fifo = tmp_path / "secret"
    os.mkfifo(fifo)
    cases = {
        "entity.xml": with_doctype(f'<!DOCTYPE nds [<!ENTITY s SYSTEM "file://{fifo}">]>', "&s;"),
        "parameter.xml": with_doctype(f'<!DOCTYPE nds [<!ENTITY % p SYSTEM "{fifo}"> %p;]>'),
        "dtd.xml": with_doctype(f'<!DOCTYPE nds SYSTEM "{fifo}">'),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    result = subprocess.run(
        [sys.executable, "-m", "publisher", "validate", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 1, result.stderr
    assert sorted(result.stderr.splitlines()[:-1]) == [
        f"{tmp_path / name}:3: <!DOCTYPE>: a DOCTYPE is not allowed: its DTD and entities are "
        "never read or expanded"
        for name in sorted(cases)
    ]


def test_an_undeclared_entity_is_not_well_formed() -> None:
    (problem,) = validate_bytes(with_doctype("", association="&key;"), "u.xml")
    assert problem.element is None and problem.line == 6 and "key" in problem.reason


# --- files and folders -----------------------------------------------------------------


def test_a_folder_is_every_xml_file_under_it_sorted(tmp_path: Path) -> None:
    (tmp_path / "b" / "c").mkdir(parents=True)
    for name in ("b/c/2.xml", "a.xml", "b/1.xml"):
        (tmp_path / name).write_bytes(document())
    (tmp_path / "notes.txt").write_text("not a document")
    assert documents(tmp_path) == [tmp_path / "a.xml", tmp_path / "b/1.xml", tmp_path / "b/c/2.xml"]
    assert documents(tmp_path / "a.xml") == [tmp_path / "a.xml"]
    assert validate_paths([tmp_path]) == []


@pytest.mark.not_xds("bad/*.xml")
def test_validate_paths_names_each_file(tmp_path: Path) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "1.xml").write_bytes(document(b"<rename/>"))
    (folder / "2.xml").write_bytes(b"<nds")
    (folder / "3.xml").write_bytes(document(COMMANDS))
    problems = validate_paths([folder])
    assert [(Path(p.file).name, p.element) for p in problems] == [("1.xml", "rename"), ("2.xml", None)]
    assert all(isinstance(p, Problem) for p in problems)


# --- the command -----------------------------------------------------------------------


def validate(*paths: Path | str):
    return CliRunner().invoke(cli, ["validate", *map(str, paths)], catch_exceptions=False)


def test_validate_exits_0_when_every_document_is_valid(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    for name in ("00000000000000000001.xml", "00000000000000000004.xml"):
        (tmp_path / "docs" / name).write_bytes(document(COMMANDS))
    (tmp_path / "one.xml").write_bytes(document(heartbeat_xml()))
    result = validate(tmp_path / "docs", tmp_path / "one.xml")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert result.stderr == "xdspub: 3 documents, 0 invalid\n"


@pytest.mark.not_xds("docs/2.xml", "bad.xml")
def test_validate_exits_1_with_one_line_per_problem(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "1.xml").write_bytes(document(COMMANDS))
    bad, line = broken(b'<value type="string">Jack</value>', b'<value type="text">Jack</value>')
    (tmp_path / "docs" / "2.xml").write_bytes(bad)
    (tmp_path / "bad.xml").write_bytes(b"<nds>\n<input>\n</nds>\n")
    result = validate(tmp_path / "docs", tmp_path / "bad.xml")
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines == [
        f"{tmp_path / 'docs' / '2.xml'}:{line}: <value>: Invalid attribute type for element value",
        lines[1],
        "xdspub: 3 documents, 2 invalid",
    ]
    assert lines[1].startswith(f"{tmp_path / 'bad.xml'}:3: not well-formed XML: ")


def test_validate_of_a_missing_path_or_of_nothing_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "one.xml").write_bytes(document())
    missing = validate(tmp_path / "one.xml", tmp_path / "none.xml")
    assert missing.exit_code == 2 and "does not exist" in missing.stderr
    assert validate().exit_code == 2


def test_the_schema_ships_with_the_templates() -> None:
    from importlib import resources

    assert (resources.files("xds_templates") / "xds.rng").is_file()
    assert "*.rng" in (Path(__file__).parent.parent / "pyproject.toml").read_text()


# --- the suite's own check (tests/conftest.py) -----------------------------------------

HOOKED = '''
import pytest
from publisher.delivery.sinks import StdoutSink

INVALID = b'<nds dtdversion="4.0"><input><rename/></input></nds>'


def test_invalid_file(tmp_path):
    (tmp_path / "out.xml").write_bytes(INVALID)


@pytest.mark.not_xds("earlier/*.xml")
def test_invalid_file_named_by_the_marker(tmp_path):
    (tmp_path / "earlier").mkdir()
    (tmp_path / "earlier" / "1.xml").write_bytes(INVALID)


def test_valid_file_and_a_link(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "1.xml").write_bytes(b'<nds dtdversion="4.0"><input/></nds>')
    (tmp_path / "docs" / "2.xml").symlink_to(tmp_path / "nowhere.xml")


def test_invalid_standard_output():
    StdoutSink._write([b"<rename/>"])


def test_valid_standard_output():
    StdoutSink._write([b'<status level="success"/>'])
'''


def test_the_suite_fails_a_test_that_publishes_invalid_xds(tmp_path: Path) -> None:
    """The check in tests/conftest.py, in a pytest run of its own (outside this run's
    temporary folders, so that its invalid files are not this test's)."""
    import subprocess
    import sys
    import tempfile

    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="xdspub-hook-") as folder:
        (Path(folder) / "test_hooked.py").write_text(HOOKED)
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider",
             "-c", "/dev/null", "--rootdir", folder, "--basetemp", f"{folder}/tmp", "-W", "ignore",
             f"{folder}/test_hooked.py"],
            cwd=root, capture_output=True, text=True, timeout=300, check=False,
        )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "5 passed, 2 errors" in output, output
    assert "published XDS is not valid (docs/validation.md):" in output, output
    assert "ERROR at teardown of test_invalid_file " in output
    assert "test_invalid_file0/out.xml:1: <rename>: Did not expect element rename there" in output
    assert "ERROR at teardown of test_invalid_standard_output " in output
    assert "standard output of test_hooked.py::test_invalid_standard_output:8: <rename>:" in output


def test_an_xdspub_process_standard_output_is_kept_when_it_is_a_document() -> None:
    from tests import conftest

    conftest._STDOUT_DOCUMENTS.clear()
    conftest.published_stdout(["export", "--db", "x", "--out", "-"], 1, b"<nds/>")
    conftest.published_stdout(["export", "--out=-"], 0, b"<nds/>")
    conftest.published_stdout(["export", "--out", "-"], 2, b"")  # refused: nothing written
    conftest.published_stdout(["export", "--out", "o.xml"], 0, b"")
    conftest.published_stdout(["poll", "--out", "-"], 0, b"")  # several documents
    kept = [name for name, _ in conftest._STDOUT_DOCUMENTS]
    conftest._STDOUT_DOCUMENTS.clear()
    assert kept == [
        "standard output of xdspub export --db x --out -",
        "standard output of xdspub export --out=-",
    ]
