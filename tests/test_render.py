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
# An attribute's name fixes its type, and whether it is multi-valued (a child table's).
ATTRIBUTE = st.sampled_from(
    [("fname", "string"), ("photo", "octet"), ("c1", "int"), ("manager", "dn"),
     ("usr_phone.phoneno", "string"), ("usr_mbr_of.idg", "dn")]
)
ATTR = st.builds(
    lambda attribute, op, old, new: Attr(op, *attribute, old, new, "." in attribute[0]),
    attribute=ATTRIBUTE,
    op=st.sampled_from([AttrOp.ADD, AttrOp.MODIFY, AttrOp.REPLACE]),
    old=st.none() | TEXT,
    new=st.lists(TEXT, min_size=1, max_size=3).map(tuple),
)


def built_then_indented(kind: str, class_name: str, event_id: int, association: str, attrs) -> bytes:
    """Each change its own element, but a multi-valued attribute's changes in its first."""
    command = _skeleton(kind).__copy__()
    command.set("class-name", class_name)
    command.set("event-id", str(event_id))
    command.find("association").text = association

    def values(parent, attr, texts):
        for text in texts:
            element = etree.SubElement(parent, "value", type=attr.xds_type)
            element.text = text
            if attr.xds_type == "dn":
                element.set("association-ref", text)

    elements = {}
    for attr in attrs:
        tag = "add-attr" if kind == "add" else "modify-attr"
        element = elements.get(attr.name) if attr.multi_valued else None
        if element is None:
            element = etree.SubElement(command, tag, {"attr-name": attr.name})
            if attr.multi_valued:
                elements[attr.name] = element
        if kind == "add":
            values(element, attr, attr.new)
            continue
        if attr.op == AttrOp.REPLACE:
            etree.SubElement(element, "remove-all-values")
        elif attr.op == AttrOp.MODIFY and attr.old is not None:
            values(etree.SubElement(element, "remove-value"), attr, [attr.old])
        values(etree.SubElement(element, "add-value"), attr, attr.new)
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
