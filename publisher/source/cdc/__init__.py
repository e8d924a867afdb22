"""Readers of the other change-data-capture formats (SOURCES.md) and their decoding rules."""
