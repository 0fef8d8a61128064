"""The import statements of our source files, read with `ast` (nothing is imported): the one
parser the layout tests build their graphs from, at the level of folders (test_families.py)
or of files (test_cycles.py).

Every import counts wherever it stands: at the top, inside a function, under
`if TYPE_CHECKING:` (an import only mypy follows still ties the two files together for a
reader, and a cycle among them is one a refactoring trips over)."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def import_statements(path: Path) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(module, names) for every import in the file: `import a.b` gives ("a.b", ()),
    `from a import b, c` gives ("a", ("b", "c")); relative imports resolved against the
    file's place under ROOT."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            yield base, tuple(a.name for a in node.names if a.name != "*")


def imported_modules(path: Path, tops: Iterable[str]) -> set[str]:
    """Every module under the top-level packages `tops` a file may import: for
    `from pkg import name` both `pkg` and `pkg.name` (name may be a submodule)."""
    found: set[str] = set()
    for module, names in import_statements(path):
        found.add(module)
        found.update(f"{module}.{n}" for n in names)
    wanted = set(tops)
    return {m for m in found if m.split(".")[0] in wanted}


def module_file(module: str) -> Path | None:
    """The file a dotted module name loads: `a/b.py`, or `a/b/__init__.py` for a package;
    None when it is not one of ours."""
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported_files(path: Path) -> set[Path]:
    """The files of ours a file imports. `import a.b.c` is a/b/c.py (the packages above it
    load too, but every submodule would then import its package's `__init__`, a cycle
    with any `__init__` that re-exports it); `from pkg import name` is pkg/name.py when
    that is a module, else pkg's `__init__.py` (or pkg.py)."""
    out: set[Path] = set()
    for module, names in import_statements(path):
        if names:
            hits = [module_file(f"{module}.{n}") or module_file(module) for n in names]
        else:
            hits = [module_file(module)]
        out.update(h for h in hits if h is not None and h != path)
    return out


def python_files(folders: Iterable[str]) -> list[Path]:
    return sorted(
        p
        for folder in folders
        for p in (ROOT / folder).rglob("*.py")
        if "node_modules" not in p.parts
    )


def file_graph(folders: Iterable[str]) -> dict[Path, set[Path]]:
    """file -> the files it imports, for every .py file under `folders` (edges to files
    outside them are dropped)."""
    files = python_files(folders)
    inside = set(files)
    return {f: imported_files(f) & inside for f in files}


def strongly_connected(graph: dict[Path, set[Path]]) -> list[list[Path]]:
    """The groups of files that import one another, directly or around a loop (Tarjan's
    algorithm, iterative: the tree is deeper than Python's recursion limit allows)."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    on_stack: set[Path] = set()
    stack: list[Path] = []
    groups: list[list[Path]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[Path, Iterator[Path]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return sorted(groups)


def shortest_cycle(graph: dict[Path, set[Path]], start: Path, within: set[Path]) -> list[Path]:
    """The shortest loop from `start` back to it through files of `within` (breadth first),
    as [start, ..., start]; [] when there is none."""
    came_from: dict[Path, Path] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph.get(node, ()) & within):
                if nxt == start:
                    chain = [node]
                    while chain[-1] != start:
                        chain.append(came_from[chain[-1]])
                    return [*reversed(chain), start]
                if nxt not in came_from:
                    came_from[nxt] = node
                    following.append(nxt)
        frontier = following
    return []


def cycles(graph: dict[Path, set[Path]]) -> list[list[Path]]:
    """For every group of files importing one another, the shortest loop through each of
    its files, each loop once (rotated to start at its first file in sorted order)."""
    out: list[list[Path]] = []
    for group in strongly_connected(graph):
        members = set(group)
        seen: set[tuple[Path, ...]] = set()
        for start in group:
            loop = shortest_cycle(graph, start, members)[:-1]
            if not loop:
                continue
            k = loop.index(min(loop))
            key = tuple(loop[k:] + loop[:k])
            if key not in seen:
                seen.add(key)
                out.append([*key, key[0]])
    return out
