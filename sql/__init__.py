"""DDL and triggers per database, run by `xdspub init-db` (a package so they install with it)."""
