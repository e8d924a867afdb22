"""``xdspub poll``: the polling service around ``cycle.run_cycle``."""
