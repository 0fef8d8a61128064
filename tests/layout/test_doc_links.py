"""Every file a doc names exists: README.md, docs/**/*.md and functions/**/README.md link
and point only at files of this repository that are there (a rename that forgets a doc, or
a doc naming a file that never was, fails here).

Checked in each doc: every relative markdown link (and the heading its `#anchor` names, in
a markdown file), every backticked repository path such as `functions/search/ranking.py`,
and every path with a file extension written out in prose or in a code block. Not checked:
a file the doc itself has the reader create (a code block named for it, as
docs/EXTENDING.md does), and what git ignores (generated files such as ops/deploy/secrets/).
"""

from __future__ import annotations

import re
from fnmatch import fnmatch
from functools import cache
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted(
    {
        ROOT / "README.md",
        *ROOT.joinpath("docs").rglob("*.md"),
        *ROOT.joinpath("functions").rglob("README.md"),
    }
)
TOP = ("engine", "functions", "workers", "triggers", "ops", "tests", "docs", "config")
"""The repository's own top-level folders: a path starting with one is ours to check."""

_LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)\)")
_TICKED = re.compile(r"`([^`\n]+)`")
_REPO_PATH = re.compile(rf"^(?:{'|'.join(TOP)})/[\w./-]*$")
_SUFFIX = re.compile(r"(?:::[\w\[\]-]+|:\d+(?:-\d+)?)$")
"""A test name (`::test_x`) or a line (`:12`) after a path."""
_EXTS = "py|md|yaml|yml|json|jsonl|toml|js|mjs|css|html|txt|sh|svg|png|cfg|ini"
_BARE = re.compile(rf"(?<![\w/.<$-])((?:{'|'.join(TOP)})/[\w./-]*\.(?:{_EXTS}))(?![\w/-])")
_FENCE = re.compile(r"^(```|~~~)\s*\S*\s*(\S+)?\s*$")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@cache
def _anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in path.read_text().splitlines():
        if line.startswith(("```", "~~~")):
            fenced = not fenced
        if fenced or not line.startswith("#"):
            continue
        slug = _slug(line.lstrip("#"))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return frozenset(out)


@cache
def _ignore_patterns() -> tuple[str, ...]:
    lines = ROOT.joinpath(".gitignore").read_text().splitlines()
    return tuple(s.strip() for s in lines if s.strip() and not s.startswith("#"))


def _ignored(rel: str) -> bool:
    """Whether .gitignore covers `rel` or a folder above it (a generated file)."""
    parts = rel.strip("/").split("/")
    for pattern in _ignore_patterns():
        anchored, pat = pattern.startswith("/"), pattern.strip("/")
        for i in range(1, len(parts) + 1):
            here = "/".join(parts[:i]) if anchored or "/" in pat else parts[i - 1]
            if fnmatch(here, pat):
                return True
    return False


def _created_by(text: str) -> set[str]:
    """Files the doc has the reader write: code blocks named for a path (```python a/b.py)."""
    out = set()
    for line in text.splitlines():
        m = _FENCE.match(line)
        if m and m.group(2) and "/" in m.group(2):
            out.add(m.group(2))
    return out


def _problems(doc: Path) -> list[str]:
    text = doc.read_text()
    made = _created_by(text)
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        where = f"{doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc.name}:{n}"
        for m in _LINK.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-z][a-z+.-]*:", target):  # http:, https:, mailto:
                continue
            file, _, anchor = target.partition("#")
            path = (doc.parent / file).resolve() if file else doc
            if not path.exists():
                out.append(f"{where}: link to {target}: no such file")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                out.append(f"{where}: link to {target}: no heading #{anchor} there")
        paths = {_SUFFIX.sub("", t) for t in _TICKED.findall(line)}
        paths = {p for p in paths if _REPO_PATH.match(p)}
        paths |= {m.group(1) for m in _BARE.finditer(line)}
        for p in sorted(paths):
            if p.rstrip("/") in made or _ignored(p) or (ROOT / p).exists():
                continue
            out.append(f"{where}: names {p}: no such file in the repository")
    return out


def test_the_docs_are_found() -> None:
    names = {str(d.relative_to(ROOT)) for d in DOCS}
    assert {"README.md", "docs/API.md", "docs/design/README.md", "functions/README.md"} <= names


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: str(d.relative_to(ROOT)))
def test_every_link_and_path_a_doc_names_exists(doc: Path) -> None:
    assert _problems(doc) == []


def test_the_check_sees_a_missing_file_a_missing_heading_and_a_stale_path(
    tmp_path: Path,
) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## A heading\n")
    doc = tmp_path / "probe.md"
    doc.write_text(
        "# Probe\n"
        "[gone](nowhere.md), [heading](other.md#no-such-heading), [ok](other.md#a-heading)\n"
        "`functions/search/streams.py` and engine/_state.py moved; `engine/_kv.py` is there\n"
        "```python functions/words/word_service.py\n```\n"
        "`functions/words/word_service.py` is made above; `ops/deploy/secrets/` is generated\n"
    )
    assert [p.split(": ", 1)[1] for p in _problems(doc)] == [
        "link to nowhere.md: no such file",
        "link to other.md#no-such-heading: no heading #no-such-heading there",
        "names engine/_state.py: no such file in the repository",
        "names functions/search/streams.py: no such file in the repository",
    ]
