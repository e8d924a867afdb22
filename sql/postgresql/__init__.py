"""PostgreSQL scripts."""
