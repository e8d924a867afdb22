"""Everything read from the database: dialects, the event log, the published schema,
query-back rows, and the DDL that creates them."""
