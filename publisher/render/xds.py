"""Commands to XDS XML (PUBLISHER.md sections 4 and 8).

The envelope and the add, modify and delete skeletons are read from ``xds_templates/`` so
an operator can change the product text or dtdversion without touching code. Attribute
elements are built with ``SubElement``, the fastest way lxml offers."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

from lxml import etree


_INPUT_MARK = "@@xdspub-commands@@"
_INDENT = "  "


@lru_cache(maxsize=None)
def _skeleton(name: str) -> etree._Element:
    text = (resources.files("xds_templates") / f"{name}.xml").read_bytes()
    parser = etree.XMLParser(remove_blank_text=True)
    return etree.fromstring(text, parser)


def _value(parent: etree._Element, xds_type: str, text: str) -> None:
    value = etree.SubElement(parent, "value", type=xds_type)
    value.text = text


def _add_attr(command: etree._Element, attr: dict[str, Any]) -> None:
    element = etree.SubElement(command, "add-attr", {"attr-name": attr["name"]})
    _value(element, attr["type"], attr["new"])


def _modify_attr(command: etree._Element, attr: dict[str, Any]) -> None:
    element = etree.SubElement(command, "modify-attr", {"attr-name": attr["name"]})
    if attr["op"] == "modify":
        if attr["old"] is not None:
            _value(etree.SubElement(element, "remove-value"), attr["type"], attr["old"])
    else:
        etree.SubElement(element, "remove-all-values")
    if attr["new"] is not None:
        _value(etree.SubElement(element, "add-value"), attr["type"], attr["new"])


def command_element(
    kind: str, class_name: str, event_id: int, association: str, attrs: Sequence[dict] | None
) -> etree._Element:
    """One add, modify or delete element."""
    command = _skeleton(kind).__copy__()  # whole, as lxml copies; copy.deepcopy only adds cost
    command.set("class-name", class_name)
    command.set("event-id", str(event_id))
    command.find("association").text = association
    for attr in attrs or ():
        (_add_attr if kind == "add" else _modify_attr)(command, attr)
    return command


def command_xml(command: etree._Element, level: int = 2) -> bytes:
    """The command serialised as whole lines, indented for its place in <nds><input>."""
    etree.indent(command, space=_INDENT, level=level)
    return (_INDENT * level).encode() + etree.tostring(command, encoding="utf-8") + b"\n"


def heartbeat_xml() -> bytes:
    """The heartbeat status, as it stands in <nds><input>."""
    return command_xml(copy.deepcopy(_skeleton("heartbeat")))


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
