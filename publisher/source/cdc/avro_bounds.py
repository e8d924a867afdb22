"""A walk over one Avro datum that checks it is bounded before fastavro decodes it
(docs/change-formats.md, Errors): fastavro trusts every count and length it reads, so an
array of ``null`` claiming 2^40 items, which takes no byte each, allocates until the
process dies, and a length past the end is read short.

The walk decodes nothing: it follows the schema over the bytes and refuses, naming the byte
where the bad count, length or value starts,

- a variable-length integer of more than 10 bytes, a negative length, a length or fixed
  size past the end of the bytes, an enum or union index the schema does not have;
- an array or map block claiming more items than the bytes left can hold, given the fewest
  bytes an item of its schema takes;
- more than MAX_ITEMS array and map items in all (items of ``null``, or of records of
  nothing but nulls, take no byte: only this bounds them);
- nesting deeper than MAX_DEPTH (a recursive schema over bytes that say nothing);
- a decimal whose precision is above MAX_DECIMAL_DIGITS, or whose bytes are more than
  that many digits take (turning a long unscaled value into a Decimal takes time quadratic
  in its length)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_ITEMS = 1 << 20
MAX_DEPTH = 64
MAX_DECIMAL_DIGITS = 1000
_VARINT_BYTES = 10  # a long's 64 bits, 7 a byte
# The bytes of the longest unscaled value of MAX_DECIMAL_DIGITS digits, and its sign bit.
_DECIMAL_BYTES = ((10**MAX_DECIMAL_DIGITS - 1).bit_length() + 1 + 7) // 8

# The fewest bytes a value of each primitive type takes.
_PRIMITIVE_SIZES = {
    "null": 0, "boolean": 1, "int": 1, "long": 1, "float": 4, "double": 8, "bytes": 1,
    "string": 1,
}
_FIXED_WIDTHS = {"boolean": 1, "float": 4, "double": 8}

Schema = Any  # fastavro's parsed form: a name, a list (a union) or a dict


class AvroBoundsError(ValueError):
    """A datum the walk refuses; ``offset`` is the byte where the refused part starts,
    counted from the datum's start; ``truncated``: the bytes end before it does."""

    def __init__(self, message: str, offset: int, truncated: bool = False) -> None:
        super().__init__(message)
        self.offset, self.truncated = offset, truncated


def check_bounds(data: bytes, schema: Schema, named: Mapping[str, Schema]) -> None:
    """Walk ``data`` as one datum of ``schema`` (fastavro's parsed form; ``named``: its
    named types by full name); AvroBoundsError when it is not bounded as the module says.
    Bytes left after the datum are the caller's to refuse."""
    _Walk(data, named).value(schema, 0)


class _Walk:
    def __init__(self, data: bytes, named: Mapping[str, Schema]) -> None:
        self.data, self.named, self.pos = data, named, 0
        self.items_left = MAX_ITEMS
        self.sizes: dict[int, int] = {}

    # --- the bytes ---

    def _long(self) -> int:
        start, result, shift = self.pos, 0, 0
        while True:
            if self.pos >= len(self.data):
                raise AvroBoundsError(
                    "the bytes end inside a variable-length integer", start, truncated=True
                )
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return (result >> 1) ^ -(result & 1)
            shift += 7
            if shift >= 7 * _VARINT_BYTES:
                raise AvroBoundsError(
                    f"a variable-length integer of more than {_VARINT_BYTES} bytes", start
                )

    def _skip(self, size: int, what: str, start: int) -> None:
        left = len(self.data) - self.pos
        if size > left:
            raise AvroBoundsError(
                f"{what} of {size} bytes, but {left} are left", start, truncated=True
            )
        self.pos += size

    def _length(self, what: str) -> int:
        start = self.pos
        size = self._long()
        if size < 0:
            raise AvroBoundsError(f"{what} of negative length {size}", start)
        self._skip(size, what, start)
        return size

    # --- the schema ---

    def _resolved(self, schema: Schema) -> Schema:
        if isinstance(schema, str) and schema not in _PRIMITIVE_SIZES:
            return self.named[schema]
        if isinstance(schema, dict) and not isinstance(schema.get("type"), str):
            return self._resolved(schema["type"])  # {"type": {...}} or {"type": [...]}
        return schema

    def _min_size(self, schema: Schema, visiting: frozenset[int] = frozenset()) -> int:
        """The fewest bytes a value of ``schema`` takes (a recursive type counts 0 where
        it recurs: a lower bound still)."""
        schema = self._resolved(schema)
        if isinstance(schema, str):
            return _PRIMITIVE_SIZES[schema]
        key = id(schema)
        if key in self.sizes:
            return self.sizes[key]
        if key in visiting:
            return 0
        visiting |= {key}
        if isinstance(schema, list):
            size = 1 + min((self._min_size(branch, visiting) for branch in schema), default=0)
        else:
            kind = schema["type"]
            if kind in ("record", "error"):
                size = sum(self._min_size(f["type"], visiting) for f in schema["fields"])
            elif kind == "fixed":
                size = schema["size"]
            elif kind in ("enum", "array", "map"):
                size = 1
            else:
                size = _PRIMITIVE_SIZES[kind]
        self.sizes[key] = size
        return size

    # --- the walk ---

    def value(self, schema: Schema, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise AvroBoundsError(f"values nested more than {MAX_DEPTH} deep", self.pos)
        schema = self._resolved(schema)
        if isinstance(schema, list):
            start = self.pos
            index = self._long()
            if not 0 <= index < len(schema):
                raise AvroBoundsError(
                    f"union index {index}, but the union has {len(schema)} branches", start
                )
            self.value(schema[index], depth + 1)
            return
        kind = schema if isinstance(schema, str) else schema["type"]
        if kind in ("int", "long"):
            self._long()
        elif kind in _FIXED_WIDTHS:
            self._skip(_FIXED_WIDTHS[kind], f"a {kind}", self.pos)
        elif kind in ("bytes", "string"):
            start = self.pos
            size = self._length(f"a {kind} value")
            self._decimal(schema, size, start)
        elif kind == "fixed":
            start = self.pos
            self._skip(schema["size"], "a fixed value", start)
            self._decimal(schema, schema["size"], start)
        elif kind == "enum":
            start = self.pos
            index = self._long()
            if not 0 <= index < len(schema["symbols"]):
                raise AvroBoundsError(
                    f"enum index {index}, but the enum has {len(schema['symbols'])} symbols",
                    start,
                )
        elif kind in ("record", "error"):
            for field in schema["fields"]:
                self.value(field["type"], depth + 1)
        elif kind == "array":
            self._blocks(schema["items"], depth, keyed=False)
        elif kind == "map":
            self._blocks(schema["values"], depth, keyed=True)
        # null takes no byte

    def _blocks(self, items: Schema, depth: int, keyed: bool) -> None:
        """An array's or map's blocks: a count, a byte size where the count is negative,
        then that many items (a map's each after its key, a string)."""
        item_size = self._min_size(items) + (1 if keyed else 0)
        what = "a map block" if keyed else "an array block"
        while True:
            start = self.pos
            count = self._long()
            if count == 0:
                return
            if count < 0:
                count = -count
                self._long()  # the block's byte size, which the items must take anyway
            left = len(self.data) - self.pos
            if item_size and count > left // item_size:
                raise AvroBoundsError(
                    f"{what} of {count} items of at least {item_size} byte(s) each, but "
                    f"{left} bytes are left",
                    start,
                )
            if count > self.items_left:
                raise AvroBoundsError(
                    f"{what} of {count} items: more than the {MAX_ITEMS} array and map "
                    "items a message may hold",
                    start,
                )
            self.items_left -= count
            for _ in range(count):
                if keyed:
                    self._length("a map key")
                self.value(items, depth + 1)

    def _decimal(self, schema: Schema, size: int, start: int) -> None:
        if not isinstance(schema, dict) or schema.get("logicalType") != "decimal":
            return
        precision = schema.get("precision")
        if isinstance(precision, int) and precision > MAX_DECIMAL_DIGITS:
            raise AvroBoundsError(
                f"a decimal of precision {precision}, more than {MAX_DECIMAL_DIGITS} digits",
                start,
            )
        if size > _DECIMAL_BYTES:
            raise AvroBoundsError(
                f"a decimal of {size} bytes, more than the {_DECIMAL_BYTES} that "
                f"{MAX_DECIMAL_DIGITS} digits take",
                start,
            )
