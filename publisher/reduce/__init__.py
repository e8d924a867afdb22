"""The reduction on Spark: rows of one cycle to statuses and XDS commands (section 4)."""
