"""The reduction: rows of one cycle to statuses and XDS commands (docs/reduction.md), as
rules in plain Python (rules.py and the rule modules beside it) run on Spark (pipeline.py)."""
