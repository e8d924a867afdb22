"""The table_key grammar: ``parse_table_key`` and its inverse ``format_table_key``."""

from grammar.table_key import TableKeyError, format_table_key, parse_table_key

__all__ = ["TableKeyError", "format_table_key", "parse_table_key"]
