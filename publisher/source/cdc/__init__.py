"""Readers of the other change-data-capture formats (docs/change-formats.md), each decoding
its own input into row changes that ``mapping`` turns into events the same way."""

# The largest GBase 8s record, Avro message or JSON line a reader buffers: a size claiming
# more is an input error at once, so that a corrupt or hostile length never fills memory
# (docs/change-formats.md, Errors).
MAX_RECORD_BYTES = 64 * 1024 * 1024
