"""XDS documents checked against the schema xdspub ships (docs/validation.md).

The schema is ``xds_templates/xds.rng``, RELAX NG built from the XDS DTD's content models
(docs/validation.md, The schema); it is loaded once per process. A problem names the
file, the line, the element and the reason; a document that is not well-formed XML is a
problem at the line where parsing stopped, and one with a DOCTYPE is refused before its
body is parsed (its DTD and entities are never read nor expanded)."""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache, partial
from importlib import resources
from pathlib import Path

from lxml import etree

SCHEMA_NAME = "xds.rng"
_RNG = "{http://relaxng.org/ns/structure/1.0}"
_NAMED = re.compile(r"Element (\S+) ")  # libxml2's messages about one element's content
_COMMANDS = ("add", "modify", "delete", "status")  # what <input> holds (docs/validation.md)
DOCTYPE = "!DOCTYPE"  # the element a DOCTYPE's problem names
_CHUNK = 1 << 16  # bytes fed at a time to the parser that looks for a DOCTYPE
# What may stand before a DOCTYPE: a byte order mark, the XML declaration, comments,
# processing instructions, spaces (ASCII-compatible encodings only; else no line is found).
_BEFORE_DOCTYPE = re.compile(rb"(?:\xef\xbb\xbf|\s+|<\?.*?\?>|<!--.*?-->)*", re.DOTALL)


@dataclass(frozen=True)
class Problem:
    """Why a document is not valid; ``element`` is None when it is not well-formed XML."""

    file: str
    line: int
    element: str | None
    reason: str

    def __str__(self) -> str:
        where = f"<{self.element}>" if self.element else "not well-formed XML"
        return f"{self.file}:{self.line}: {where}: {self.reason}"


def _grammar() -> etree._Element:
    return etree.fromstring((resources.files("xds_templates") / SCHEMA_NAME).read_bytes())


@lru_cache(maxsize=1)
def schema() -> etree.RelaxNG:
    """The shipped schema, read once."""
    return etree.RelaxNG(_grammar())


@lru_cache(maxsize=1)
def _command_schema() -> etree.RelaxNG:
    """The same grammar started at one command: libxml2 reports some problems (a missing
    required attribute) without a place, and checking each command alone finds it."""
    grammar = _grammar()
    start = grammar.find(f"{_RNG}start")
    start[:] = [etree.Element(f"{_RNG}choice")]
    for name in _COMMANDS:
        etree.SubElement(start[0], f"{_RNG}ref", name=name)
    return etree.RelaxNG(grammar)


def _parser() -> etree.XMLParser:
    # huge_tree: a value may hold up to Maximum Value Length characters (docs/parameters.md),
    # more than libxml2 takes in one text node by default; a document reaches this parser
    # only without a DOCTYPE, so with no entity to amplify. No entity, DTD or network is
    # fetched: the file is checked, never trusted.
    return etree.XMLParser(
        huge_tree=True, resolve_entities=False, load_dtd=False, no_network=True
    )


class _Found(Exception):
    """What the prologue parser stopped at: a DOCTYPE or the root element."""

    def __init__(self, doctype: bool) -> None:
        self.doctype = doctype


class _Prologue:
    """Parser target that stops at the DOCTYPE, before its internal subset is read, or at
    the root element, after which no DOCTYPE may come."""

    def doctype(self, *_declared: object) -> None:
        raise _Found(doctype=True)

    def start(self, *_element: object) -> None:
        raise _Found(doctype=False)

    def close(self) -> None:
        pass


def _doctype(chunks: Iterable[bytes], name: str) -> Problem | None:
    """The problem of a document (read as ``chunks``) that has a DOCTYPE, else None; reads
    no further than the DOCTYPE's start or the root element's (docs/validation.md, The
    command). An XDS document declares neither a DTD nor entities: refusing the DOCTYPE
    refuses every entity declaration, and a reference to an undeclared entity is not
    well-formed."""
    parser = etree.XMLParser(
        target=_Prologue(), resolve_entities=False, load_dtd=False, no_network=True
    )
    head: list[bytes] = []
    try:
        for chunk in chunks:
            head.append(chunk)
            parser.feed(chunk)
        parser.close()
    except _Found as found:
        if found.doctype:
            reason = "a DOCTYPE is not allowed: its DTD and entities are never read or expanded"
            return Problem(name, _doctype_line(b"".join(head)), DOCTYPE, reason)
    except etree.XMLSyntaxError:
        pass  # the whole parse reports it, at its line
    return None


def _doctype_line(head: bytes) -> int:
    """The line of the DOCTYPE that starts ``head`` once what may come before it is
    skipped; 0 when it is not found there (an encoding that is not ASCII-compatible)."""
    start = _BEFORE_DOCTYPE.match(head).end()
    return head.count(b"\n", 0, start) + 1 if head.startswith(b"<!DOCTYPE", start) else 0


def _chunks(data: bytes) -> Iterator[bytes]:
    view = memoryview(data)
    for start in range(0, max(len(view), 1), _CHUNK):
        yield bytes(view[start : start + _CHUNK])




def _place(tree: etree._Element, entry: etree._LogEntry) -> tuple[int, str | None]:
    """The line and the element of one error in ``tree``'s validation: the element its
    message names (its path may point at a child of it), else the one at its path. Line 0
    when libxml2 gave no place for it."""
    try:
        found = tree.getroottree().xpath(entry.path) if entry.path else []
    except etree.XPathError:  # a path through prefixed names this tree does not declare
        found = []
    node = found[0] if found and isinstance(found[0], etree._Element) else None
    named = _NAMED.match(entry.message)
    if named is None:
        if node is not None:
            return node.sourceline or entry.line or 0, node.tag
        last = re.sub(r"\[\d+\]$", "", (entry.path or "").rsplit("/", 1)[-1])  # add[2]: add
        return entry.line or 0, last or None
    if node is not None:
        node = next((n for n in (node, *node.iterancestors()) if n.tag == named[1]), None)
    return (node.sourceline or 0) if node is not None else 0, named[1]


def _command_line(root: etree._Element, element: str) -> int:
    """The line of the first problem of the first command in <input> or <output> that
    holds ``element`` and is not valid alone; 0 when there is none."""
    checker = _command_schema()
    for part in root.iterchildren("input", "output"):
        for command in part.iterchildren():
            if not any(node.tag == element for node in command.iter()):
                continue
            alone = copy.deepcopy(command)  # keeps each node's line
            if not checker.validate(etree.ElementTree(alone)):
                line = next((_place(alone, entry)[0] for entry in checker.error_log), 0)
                return line or command.sourceline or 0
    return 0


def _problems(document: etree._ElementTree, name: str) -> list[Problem]:
    checker = schema()
    if checker.validate(document):
        return []
    root = document.getroot()
    problems = []
    for entry in checker.error_log:
        line, element = _place(root, entry)
        element = element or root.tag
        line = line or _command_line(root, element)
        reason = entry.message.replace(" , ", ", ")  # libxml2's "an element , got nothing"
        problems.append(Problem(name, line, element, reason))
    return sorted(problems, key=lambda problem: problem.line)


def _not_well_formed(error: etree.XMLSyntaxError, name: str) -> Problem:
    line = error.lineno or (error.position[0] if error.position else 0)
    return Problem(name, line or 0, None, error.msg or str(error))


def validate_bytes(data: bytes, name: str) -> list[Problem]:
    """The problems of one document held in memory, reported under ``name``."""
    return checked_bytes(data, name)[1]


def checked_bytes(data: bytes, name: str) -> tuple[etree._ElementTree | None, list[Problem]]:
    """One document held in memory, parsed (None when it has a DOCTYPE or is not
    well-formed), and its problems, reported under ``name``: what a consumer may read of
    it once there are none."""
    refused = _doctype(_chunks(data), name)
    if refused:
        return None, [refused]
    try:
        document = etree.ElementTree(etree.fromstring(data, _parser()))
    except etree.XMLSyntaxError as error:
        return None, [_not_well_formed(error, name)]
    return document, _problems(document, name)


def validate_file(path: Path) -> list[Problem]:
    """The problems of the document in ``path``."""
    try:
        with open(path, "rb") as stream:
            refused = _doctype(iter(partial(stream.read, _CHUNK), b""), str(path))
        if refused:
            return [refused]
        document = etree.parse(str(path), _parser())
    except etree.XMLSyntaxError as error:
        return [_not_well_formed(error, str(path))]
    except OSError as error:
        return [Problem(str(path), 0, None, f"cannot read: {error}")]
    return _problems(document, str(path))


def documents(path: Path) -> list[Path]:
    """``path`` itself, or every ``*.xml`` file under the directory ``path``, recursively,
    sorted (links to directories are not followed)."""
    if not path.is_dir():
        return [path]
    found = []
    for folder, _dirs, files in os.walk(path):
        found += [Path(folder, name) for name in files if name.endswith(".xml")]
    return sorted(found)


def validate_paths(paths: Iterable[Path | str]) -> list[Problem]:
    """The problems of every document in ``paths``: files, and directories as
    ``documents`` lists them."""
    return [
        problem
        for path in paths
        for document in documents(Path(path))
        for problem in validate_file(document)
    ]
