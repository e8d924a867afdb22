"""Run a command and print the peak resident memory of its whole process tree (the
Python driver, the Spark JVM and the Python workers together), sampled every 0.1 s.
/usr/bin/time -v reports only the largest single process.

    python3 bench/peak_rss.py xdspub export --db sqlite:////tmp/backlog.db --out /tmp/out.xml
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path


def tree_rss_kib(root: int) -> int:
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        pid = int(entry.name)
        children.setdefault(int(fields["PPid"]), []).append(pid)
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0])
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


def main() -> int:
    started = time.monotonic()
    process = subprocess.Popen(sys.argv[1:])
    peak = 0
    while process.poll() is None:
        peak = max(peak, tree_rss_kib(process.pid))
        time.sleep(0.1)
    print(
        f"peak_rss: {peak / 1024:.0f} MiB over the process tree; "
        f"wall {time.monotonic() - started:.1f} s; exit {process.returncode}",
        file=sys.stderr,
    )
    return process.returncode


if __name__ == "__main__":
    sys.exit(main())
