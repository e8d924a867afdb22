"""The renderer fills a cached, indented template per command shape: its bytes must be those
of the command built element by element and indented afterwards (the plain way, here)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from publisher.model.commands import Attr, AttrOp, Command, CommandKind
from publisher.render.xds import _skeleton, command_xml

# Texts XML 1.0 can carry, markup and whitespace-only ones included.
TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\ufffe\uffff")
    .filter(lambda c: c in "\t\n\r" or ord(c) >= 0x20),
    max_size=8,
)
NAME = st.sampled_from(["fname", "lname", "photo", "c1"])
ATTR = st.builds(
    Attr,
    op=st.sampled_from([AttrOp.MODIFY, AttrOp.REPLACE]),
    name=NAME,
    xds_type=st.sampled_from(["string", "octet", "int"]),
    old=st.none() | TEXT,
    new=st.none() | TEXT,
)


def built_then_indented(kind: str, class_name: str, event_id: int, association: str, attrs) -> bytes:
    command = _skeleton(kind).__copy__()
    command.set("class-name", class_name)
    command.set("event-id", str(event_id))
    command.find("association").text = association

    def value(parent, attr_type, text):
        etree.SubElement(parent, "value", type=attr_type).text = text

    for attr in attrs:
        if kind == "add":
            value(etree.SubElement(command, "add-attr", {"attr-name": attr.name}), attr.xds_type, attr.new)
            continue
        element = etree.SubElement(command, "modify-attr", {"attr-name": attr.name})
        if attr.op == AttrOp.MODIFY:
            if attr.old is not None:
                value(etree.SubElement(element, "remove-value"), attr.xds_type, attr.old)
        else:
            etree.SubElement(element, "remove-all-values")
        if attr.new is not None:
            value(etree.SubElement(element, "add-value"), attr.xds_type, attr.new)
    etree.indent(command, space="  ", level=2)
    return b"    " + etree.tostring(command, encoding="utf-8") + b"\n"


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(list(CommandKind)),
    class_name=st.sampled_from(["usr", "t1"]),
    event_id=st.integers(1, 10**12),
    association=TEXT,
    attrs=st.lists(ATTR, max_size=4),
)
def test_template_gives_the_bytes_of_a_command_built_whole(kind, class_name, event_id, association, attrs):
    attrs = tuple(attrs) if kind != CommandKind.DELETE else ()
    expected = built_then_indented(kind, class_name, event_id, association, attrs)
    command = Command(kind, class_name, event_id, association, attrs)
    assert command_xml(command) == expected
    # The cached template stays empty: a second command of the same shape is not polluted.
    assert command_xml(command) == expected
