"""Benchmark helper (by hand, not collected by pytest): run any command, report wall, CPU and the peak RSS
of its whole process tree (workers, forkservers and Ray included), and kill the tree past a memory limit.

    .venv/bin/python tests/bench_tree.py --limit-gb 8 -- .venv/bin/evictlens whatif /tmp/rec100 \\
        --eviction-hard 'memory.available<200Mi' --json

The tree is sampled from /proc every 0.1 s (the peak can be missed by a spike shorter than that);
CPU is user+sys of the command (RUSAGE_CHILDREN) plus each descendant's last sample from /proc.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


TICKS = os.sysconf("SC_CLK_TCK")


def tree_rss(root: int, cpu: dict[int, float]) -> int:
    """Resident bytes of ``root`` and every descendant; ``cpu`` gets each one's user+sys seconds so far."""
    tree, total, stack = _children(), 0, [root]
    while stack:
        pid = stack.pop()
        stack.extend(tree.get(pid, ()))
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
            stat = Path(f"/proc/{pid}/stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            cpu[pid] = (int(fields[11]) + int(fields[12])) / TICKS
        except (OSError, IndexError, ValueError):
            pass
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit-gb", type=float, default=8.0, help="kill the tree past this RSS")
    parser.add_argument("--quiet", action="store_true", help="send the command's stdout to /dev/null")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    start = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL if args.quiet else None, start_new_session=True)
    peak, killed = 0, False
    cpu: dict[int, float] = {}
    while proc.poll() is None:
        rss = tree_rss(proc.pid, cpu)
        peak = max(peak, rss)
        if rss > args.limit_gb * 1e9:
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
            break
        time.sleep(0.1)
    code = proc.wait()
    wall = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    seen = sum(cpu.values()) - cpu.get(proc.pid, 0.0) + usage.ru_utime + usage.ru_stime
    note = f" KILLED past {args.limit_gb} GB" if killed else ""
    print(
        f"bench: exit {code}{note}; wall {wall:.1f} s; CPU {seen:.1f} s; process-tree peak RSS {peak / 1e9:.2f} GB",
        file=sys.stderr,
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
