"""Run a command and print the peak resident memory of its whole process tree (the
Python driver, the Spark JVM and the Python workers together), sampled every 0.1 s, and
what each process held at that peak. /usr/bin/time -v reports only the largest single
process. Forked workers share pages, so the sum is an upper bound.

    python3 bench/peak_rss.py xdspub export --db sqlite:////tmp/backlog.db --out /tmp/out.xml
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple


class Proc(NamedTuple):
    pid: int
    rss_kib: int
    cmdline: str


def process_tree(root: int) -> list[Proc]:
    """``root`` and every process below it (the Spark JVM, the Python workers)."""
    children: dict[int, list[int]] = {}
    seen: dict[int, Proc] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        pid = int(entry.name)
        children.setdefault(int(fields["PPid"]), []).append(pid)
        seen[pid] = Proc(pid, int(fields.get("VmRSS", "0 kB").split()[0]), command.strip())
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        if pid in seen:
            found.append(seen[pid])
        stack.extend(children.get(pid, []))
    return found


def tree_rss_kib(root: int) -> int:
    return sum(proc.rss_kib for proc in process_tree(root))


def main() -> int:
    started = time.monotonic()
    process = subprocess.Popen(sys.argv[1:])
    peak: list[Proc] = []
    peak_kib = 0
    while process.poll() is None:
        sample = process_tree(process.pid)
        if (kib := sum(proc.rss_kib for proc in sample)) > peak_kib:
            peak, peak_kib = sample, kib
        time.sleep(0.1)
    print(
        f"peak_rss: {peak_kib / 1024:.0f} MiB over the process tree; "
        f"wall {time.monotonic() - started:.1f} s; exit {process.returncode}",
        file=sys.stderr,
    )
    for proc in sorted(peak, key=lambda p: (p.rss_kib, p.cmdline), reverse=True):
        print(f"peak_rss: {proc.rss_kib / 1024:7.0f} MiB  {proc.cmdline[:100]}", file=sys.stderr)
    return process.returncode


if __name__ == "__main__":
    sys.exit(main())
