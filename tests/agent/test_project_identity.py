"""One project per repository: events from the main checkout, a subfolder and two linked
worktrees (made by real `git worktree`) land in one project, the one git itself names
(`git rev-parse --git-common-dir`'s folder); AGENTMEMORY_PROJECT_NAME still wins."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent.cli_stack import CliStack, run_hook
from tests.fixtures import wait_until
from workers.hooks import SCRIPTS
from workers.hooks._hookcore import Settings, project_of

HOOK = f"{os.path.realpath(sys.executable)} -S {SCRIPTS['claude-code']}"


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    res = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> dict[str, Path]:
    """ledger/ (main checkout, with src/api/), ledger-feature/ and trees/hotfix/ (linked
    worktrees, one of them with a subfolder)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    main = tmp_path / "ledger"
    (main / "src" / "api").mkdir(parents=True)
    _git(main, "init", "-q", "-b", "main")
    (main / "src" / "api" / "refunds.py").write_text("ROUND = 2\n")
    _git(main, "add", ".")
    _git(main, "commit", "-q", "-m", "first")
    feature = tmp_path / "ledger-feature"
    hotfix = tmp_path / "trees" / "hotfix"
    _git(main, "worktree", "add", "-q", str(feature), "-b", "feature")
    _git(main, "worktree", "add", "-q", str(hotfix), "-b", "hotfix")
    return {
        "main": main,
        "subfolder": main / "src" / "api",
        "feature": feature,
        "hotfix-subfolder": hotfix / "src" / "api",
    }


@pytest.mark.unit
def test_every_worktree_and_subfolder_is_the_repository_git_names(repo: dict[str, Path]) -> None:
    for where, path in repo.items():
        common = _git(path, "rev-parse", "--path-format=absolute", "--git-common-dir")
        assert Path(common).parent.name == "ledger", where  # what git says
        assert project_of(Settings({}), str(path)) == "ledger", where
    assert (
        project_of(Settings({"AGENTMEMORY_PROJECT_NAME": "billing"}), str(repo["feature"]))
        == "billing"
    )
    outside = repo["main"].parent / "notes"
    outside.mkdir()
    assert project_of(Settings({}), str(outside)) == "notes"  # no repository: the folder


@pytest.mark.unit
def test_a_bare_repositorys_worktrees_are_named_for_it(
    tmp_path: Path, repo: dict[str, Path]
) -> None:
    bare = tmp_path / "payments.git"
    _git(tmp_path, "clone", "-q", "--bare", str(repo["main"]), str(bare))
    tree = tmp_path / "payments-main"
    _git(bare, "worktree", "add", "-q", str(tree), "main")
    assert project_of(Settings({}), str(tree)) == "payments"


def test_hook_events_from_two_worktrees_and_a_subfolder_share_one_project(
    running_stack: CliStack, repo: dict[str, Path]
) -> None:
    env = running_stack.hook_env()
    for i, (where, path) in enumerate(repo.items()):
        payload = {
            "session_id": "wt-session",
            "cwd": str(path),
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": f"pytest -q  # from {where}"},
            "tool_response": {"stdout": "ok"},
            "tool_use_id": f"toolu_wt_{i}",
        }
        assert run_hook(HOOK, payload, env)[0] == 0
    obs = wait_until(
        lambda: len(found := running_stack.observations("wt-session")) == len(repo) and found,
        timeout=20,
    )
    assert {o["project"] for o in obs} == {"ledger"}
    with running_stack.rest() as c:
        projects = c.get("/agentmemory/sessions", params={"project": "ledger"}).json()["sessions"]
    assert [s["id"] for s in projects] == ["wt-session"]


def test_two_projects_split_before_are_merged_into_one(running_stack: CliStack) -> None:
    st = running_stack
    # what a worktree recorded under its own folder's name, before one project per repository
    for i, project in enumerate(("ledger-old-wt", "ledger-old-wt", "ledger-main")):
        payload = {
            "session_id": f"split-{project}",
            "cwd": "/nowhere",
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": f"make reconcile-ledger-{i}"},
            "tool_response": {"stdout": "reconciled"},
            "tool_use_id": f"toolu_split_{i}",
        }
        env = {**st.hook_env(), "AGENTMEMORY_PROJECT_NAME": project}
        assert run_hook(HOOK, payload, env)[0] == 0
    wait_until(lambda: len(st.observations("split-ledger-old-wt")) == 2)
    dry = st.cli("project", "merge", "ledger-old-wt", "ledger-main", "--dry-run").stdout
    assert "would move 2 observations, 1 sessions" in dry, dry
    assert {o["project"] for o in st.observations("split-ledger-old-wt")} == {"ledger-old-wt"}
    done = st.cli("project", "merge", "ledger-old-wt", "ledger-main").stdout
    assert "moved 2 observations, 1 sessions" in done, done
    assert {o["project"] for o in st.observations("split-ledger-old-wt")} == {"ledger-main"}
    with st.rest() as c:
        sessions = c.get("/agentmemory/sessions", params={"project": "ledger-main"}).json()
        old = c.get("/agentmemory/sessions", params={"project": "ledger-old-wt"}).json()

        def found_in_merged() -> bool:
            hits = c.post(
                "/agentmemory/search",
                json={"query": "reconcile-ledger-0", "project": "ledger-main", "limit": 5},
            ).json()
            return "reconcile-ledger-0" in json.dumps(hits)

        # the search index replaced the moved records: found under the project they joined
        wait_until(found_in_merged, timeout=20, what="the moved record found in ledger-main")
    assert sorted(s["id"] for s in sessions["sessions"]) == [
        "split-ledger-main",
        "split-ledger-old-wt",
    ]
    assert old["sessions"] == []
    again = st.cli("project", "merge", "ledger-main", "ledger-main", check=False)
    assert again.returncode != 0 and "same project" in again.stdout + again.stderr
