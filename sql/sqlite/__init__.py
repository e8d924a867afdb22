"""SQLite scripts."""
