"""Reading processes from /proc (Linux): a process tree and a command line, for the
benchmarks and the simulated cluster that measure or kill a supervisor with its workers."""

from __future__ import annotations

from pathlib import Path


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def process_tree(root: int) -> list[int]:
    """`root` and every descendant (workers run in sessions of their own, still children)."""
    seen, todo = [], [root]
    while todo:
        pid = todo.pop()
        seen.append(pid)
        todo += _children(pid)
    return seen


def cmdline(pid: int) -> list[str]:
    """The process's argv ([] once it is gone)."""
    try:
        return [
            c.decode(errors="replace")
            for c in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if c
        ]
    except OSError:
        return []


def kb_fields(pid: int, file: str, *names: str) -> dict[str, float]:
    """The `Name: N kB` lines `names` of /proc/<pid>/<file> (status, smaps_rollup) in MB;
    those missing (or the process gone) absent."""
    out: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/{file}").read_text().splitlines():
            name, _, rest = line.partition(":")
            if name in names:
                out[name] = int(rest.split()[0]) / 1024
    except OSError:
        pass
    return out
