"""The path guard itself (functions/kernel/confine.py; upstream 0.9.30,
src/functions/path-guard.ts @0219906): roots, `~`, `..`, symlinks and the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from functions.kernel.confine import OutsideRoots, allowed_roots, confine


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    (h / ".agentmemory").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("AGENTMEMORY_IMPORT_ROOT", raising=False)
    return h


def test_home_agentmemory_is_a_root_and_a_path_not_written_yet_is_judged_by_its_parent(
    home: Path,
) -> None:
    target = home / ".agentmemory" / "vault" / "new" / "note.md"
    assert confine(str(target)) == target.resolve()
    assert confine("~/.agentmemory/x.md") == (home / ".agentmemory" / "x.md").resolve()


def test_dotdot_and_symlinks_do_not_lead_out(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (home / ".agentmemory" / "link").symlink_to(out, target_is_directory=True)
    for raw in (
        f"{home}/.agentmemory/../../out/a.md",
        f"{home}/.agentmemory/link/a.md",
        f"{home}/.agentmemory/link/new/deeper/a.md",
        str(out),
    ):
        with pytest.raises(OutsideRoots) as refused:
            confine(raw)
        assert f"path {out}" in str(refused.value) and "AGENTMEMORY_IMPORT_ROOT" in str(
            refused.value
        )


def test_the_variable_adds_absolute_roots_split_by_the_path_separator(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    monkeypatch.setenv("AGENTMEMORY_IMPORT_ROOT", f" {a} :relative:~/{b.relative_to(home.parent)}:")
    monkeypatch.setenv("HOME", str(home))
    roots = allowed_roots()
    assert a in roots and Path("relative") not in roots
    assert confine(str(a / "x.jsonl")) == (a / "x.jsonl").resolve()
    with pytest.raises(OutsideRoots):
        confine(str(b))  # `~/b` is under HOME, and HOME is not tmp_path


def test_blank_and_nul_paths_are_refused(home: Path) -> None:
    for raw in ("", "   ", "a\x00b"):
        with pytest.raises(OutsideRoots, match="non-empty"):
            confine(raw)
