-- The event log table (docs/event-log.md). Columns are read by position; their
-- names may be changed, their order may not. `xdspub init-db` fills in the schema (a
-- MariaDB database), the event log's name and the names derived from it, each one quoted.
-- event_time is UTC. The binary collation keeps status comparisons case-sensitive, as
-- the documents require.
CREATE DATABASE IF NOT EXISTS {{schema}};

CREATE TABLE IF NOT EXISTS {{schema}}.{{log_table}} (
    record_id   BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    table_key   VARCHAR(1024),
    status      CHAR(1) NOT NULL DEFAULT 'N',
    event_type  SMALLINT,
    event_time  DATETIME(6) NOT NULL DEFAULT UTC_TIMESTAMP(6),
    perpetrator VARCHAR(128),
    table_name  VARCHAR(128),
    column_name VARCHAR(128),
    old_value   LONGTEXT,
    new_value   LONGTEXT,
    -- MariaDB has no partial indexes: status leads, so the pending rows are one range.
    KEY {{pending_index}} (status, record_id),
    KEY {{pending_time_index}} (status, event_time, record_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
