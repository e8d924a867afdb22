"""Readers of the other change-data-capture formats (docs/change-formats.md), each decoding
its own input into row changes that ``mapping`` turns into events the same way."""
