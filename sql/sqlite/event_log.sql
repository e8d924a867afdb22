-- The event log table (docs/event-log.md). Columns are read by position; their
-- names may be changed, their order may not. `xdspub init-db` fills in the event
-- log's name and the names derived from it, each one quoted.
CREATE TABLE IF NOT EXISTS {{log_table}} (
    record_id   INTEGER PRIMARY KEY AUTOINCREMENT,  -- positive, ascending, never reused
    table_key   VARCHAR(1024),
    status      CHAR(1) NOT NULL DEFAULT 'N',
    event_type  SMALLINT,
    event_time  TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
    perpetrator VARCHAR(128),
    table_name  VARCHAR(128),
    column_name VARCHAR(128),
    old_value   TEXT,
    new_value   TEXT
);

-- Pending rows by record_id, and by event_time for future-event processing: partial
-- indexes stay as small as the backlog.
CREATE INDEX IF NOT EXISTS {{pending_index}}
    ON {{log_table}} (record_id) WHERE status = 'N';
CREATE INDEX IF NOT EXISTS {{pending_time_index}}
    ON {{log_table}} (event_time, record_id) WHERE status = 'N';
