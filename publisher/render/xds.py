"""Commands to XDS XML (docs/rendering.md).

The envelope and the add, modify and delete skeletons are read from ``xds_templates/`` so
an operator can change the product text or dtdversion without touching code. A command is
built once per shape (its kind, class and attributes' elements) and then copied, its
values filled in."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources

from lxml import etree

from publisher.model.commands import Attr, AttrOp, Command, CommandKind
from publisher.model.value_text import DN

_INPUT_MARK = "@@xdspub-commands@@"
JDBC_NAMESPACE = "urn:dirxml:jdbc"
_LOCAL_TIME = f"{{{JDBC_NAMESPACE}}}database-local-time"
_INDENT = "  "
_LEVEL = 2  # a command's depth in <nds><input>


@lru_cache(maxsize=None)
def _skeleton(name: str) -> etree._Element:
    text = (resources.files("xds_templates") / f"{name}.xml").read_bytes()
    parser = etree.XMLParser(remove_blank_text=True)
    return etree.fromstring(text, parser)


def _values(parent: etree._Element, xds_type: str, count: int) -> None:
    for _ in range(count):
        etree.SubElement(parent, "value", type=xds_type)


def _add_attr(name: str, xds_type: str, count: int) -> etree._Element:
    element = etree.Element("add-attr", {"attr-name": name})
    _values(element, xds_type, count)
    return element


def _modify_attr(name: str, xds_type: str, pieces: tuple[tuple[str, int], ...]) -> etree._Element:
    element = etree.Element("modify-attr", {"attr-name": name})
    for tag, count in pieces:
        _values(etree.SubElement(element, tag), xds_type, count)
    return element


def _pieces(attr: Attr) -> tuple[list[tuple[str, int]], list[str]]:
    """One change's elements inside a modify-attr, and their values' texts."""
    pieces, texts = [], []
    if attr.op == AttrOp.REPLACE:
        pieces.append(("remove-all-values", 0))
    elif attr.op == AttrOp.MODIFY and attr.old is not None:
        pieces.append(("remove-value", 1))
        texts.append(attr.old)
    if attr.new:
        pieces.append(("add-value", len(attr.new)))
        texts += attr.new
    return pieces, texts


Shape = tuple[tuple, ...]  # one entry per attribute element: its elements, not its values


def _shape(kind: CommandKind, attrs: Sequence[Attr]) -> tuple[Shape, list[str]]:
    """The command's attribute elements, and the texts of its <value> elements in
    document order. Each change of a single-valued attribute is an element of its own;
    the changes of a multi-valued one join its first element (docs/classes.md)."""
    elements: list[tuple[str, str, list]] = []  # name, xds_type, [(pieces or count, texts)]
    shared: dict[str, list] = {}
    for attr in attrs:
        change = (len(attr.new), list(attr.new)) if kind == CommandKind.ADD else _pieces(attr)
        if attr.multi_valued and attr.name in shared:
            shared[attr.name].append(change)
            continue
        changes = [change]
        elements.append((attr.name, attr.xds_type, changes))
        if attr.multi_valued:
            shared[attr.name] = changes
    shape, texts = [], []
    for name, xds_type, changes in elements:
        if kind == CommandKind.ADD:
            shape.append((name, xds_type, sum(count for count, _ in changes)))
        else:
            shape.append((name, xds_type, tuple(p for pieces, _ in changes for p in pieces)))
        texts += [text for _, change_texts in changes for text in change_texts]
    return tuple(shape), texts


@lru_cache(maxsize=None)  # one per command kind and class
def _command_base(kind: CommandKind, class_name: str, local_time: bool) -> etree._Element:
    """The command's skeleton for its class, indented, without attributes; ``local_time``:
    with jdbc:database-local-time, its namespace declared on the command."""
    command = _skeleton(kind).__copy__()  # whole, as lxml copies; copy.deepcopy only adds cost
    if local_time:  # lxml declares a namespace only on a new element
        declared = etree.Element(command.tag, dict(command.attrib), nsmap={"jdbc": JDBC_NAMESPACE})
        declared.extend(command)
        declared.set(_LOCAL_TIME, "")
        command = declared
    command.set("class-name", class_name)
    etree.indent(command, space=_INDENT, level=_LEVEL)
    return command


@lru_cache(maxsize=1024)  # a schema's attributes take few forms (a hundred or so)
def _attr_element(kind: CommandKind, attr: tuple) -> etree._Element:
    """One attribute's element (an entry of a Shape), indented for its place in a command."""
    element = (_add_attr if kind == CommandKind.ADD else _modify_attr)(*attr)
    etree.indent(element, space=_INDENT, level=_LEVEL + 1)
    return element


@lru_cache(maxsize=2048)  # a few shapes are most commands, then a long tail; one costs about 12 KB
def _template(kind: CommandKind, class_name: str, shape: Shape, local_time: bool) -> etree._Element:
    """The command with every element in place and indented as etree.indent lays it out,
    its values still empty: copying it costs one call into lxml. A new shape is put
    together from copies of cached parts, one call per attribute, not one per element."""
    command = _command_base(kind, class_name, local_time).__copy__()
    if shape:
        inner, closing = "\n" + _INDENT * (_LEVEL + 1), "\n" + _INDENT * _LEVEL
        command[-1].tail = inner  # the skeleton's last element: <association> at least
        for attr in shape:
            element = _attr_element(kind, attr).__copy__()
            element.tail = inner
            command.append(element)
        command[-1].tail = closing
    return command


def command_xml(command: Command) -> bytes:
    """One add, modify or delete command as whole lines, indented for its place in
    <nds><input>."""
    shape, texts = _shape(command.kind, command.attrs)
    local_time = command.local_time
    element = _template(command.kind, command.class_name, shape, local_time is not None).__copy__()
    element.set("event-id", str(command.event_id))
    if local_time is not None:
        element.set(_LOCAL_TIME, local_time)
    # An indented leaf keeps its text as set: filling the template after indenting it gives
    # the bytes that indenting the filled command would.
    for node, text in zip(element.iter("association", "value"), (command.association, *texts)):
        node.text = text
        if node.get("type") == DN:  # a reference names its object (docs/classes.md)
            node.set("association-ref", text)
    return _line(element)


def _line(command: etree._Element) -> bytes:
    return _INDENT.encode() * _LEVEL + etree.tostring(command, encoding="utf-8") + b"\n"


def heartbeat_xml() -> bytes:
    """The heartbeat status, as it stands in <nds><input>."""
    heartbeat = copy.deepcopy(_skeleton("heartbeat"))
    etree.indent(heartbeat, space=_INDENT, level=_LEVEL)
    return _line(heartbeat)


@lru_cache(maxsize=None)
def envelope() -> tuple[bytes, bytes]:
    """The document's text before and after its commands, from the envelope skeleton."""
    nds = copy.deepcopy(_skeleton("envelope"))
    nds.find("input").text = _INPUT_MARK
    etree.indent(nds, space=_INDENT)
    text = etree.tostring(nds, encoding="unicode", xml_declaration=False)
    head, tail = text.split(_INPUT_MARK)
    declaration = '<?xml version="1.0" encoding="UTF-8"?>\n'
    return (declaration + head + "\n").encode(), (_INDENT + tail + "\n").encode()
