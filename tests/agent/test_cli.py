"""The CLI against a real engine: it finds the instance it was pointed at, every hint names
that instance again, `--url` reaches a server by REST, and `doctor` exits 0 only when
what the user set up works."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.agent.cli_stack import CLI, CliStack
from tests.fixtures import free_port_block


def run(
    st: CliStack,
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """The CLI exactly as typed: no flags added (unlike `CliStack.cli`)."""
    return subprocess.run(
        [*CLI, *args],
        env=env or st.env,
        cwd=cwd or st.home,
        capture_output=True,
        text=True,
        timeout=90,
    )


@contextmanager
def instance_two(st: CliStack) -> Iterator[subprocess.CompletedProcess[str]]:
    """Instance 2 on the stack's port block, its data root set only in the starting shell."""
    env = {**st.env, "AGENTMEMORY_DATA_DIR": str(st.data_dir)}
    flags = ["--instance", "2", "--port", str(st.port)]
    res = run(st, "start", "--detach", *flags, "--config", str(st.config), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    try:
        yield res
    finally:
        run(st, "stop", *flags, env=env)
        try:
            pid = json.loads((st.data_dir / "instance-2" / "engine.pid").read_text())["pid"]
            os.killpg(int(pid), signal.SIGKILL)
        except (OSError, ValueError, KeyError):
            pass


def test_instance_k_alone_finds_a_running_instance_and_the_panel_names_it(stack: CliStack) -> None:
    with instance_two(stack) as started:
        flags = f"--instance 2 --port {stack.port}"
        assert f"agentmemory stop {flags}" in started.stdout
        assert f"agentmemory connect claude-code --with-hooks {flags}" in started.stdout

        # Another shell: neither AGENTMEMORY_DATA_DIR nor --port, only the number.
        status = run(stack, "status", "--instance", "2")
        assert status.returncode == 0, status.stdout + status.stderr
        assert f"http://127.0.0.1:{stack.port + 200}/agentmemory" in status.stdout
        assert str(stack.data_dir / "instance-2") in status.stdout
        assert "0 sessions, 0 observations, 0 memories" in status.stdout
        assert "{" not in status.stdout  # text, not a dict

        found = run(stack, "search", "anything", "--instance", "2", "--json")
        assert found.returncode == 0, found.stderr
        assert "results" in json.loads(found.stdout)

        again = run(stack, "start", "--instance", "2")
        assert "already running" in again.stdout
        assert (
            f"agentmemory stop {flags} --data-dir {stack.data_dir / 'instance-2'}" in again.stdout
        )


def test_hints_for_a_stopped_instance_carry_its_flags(stack: CliStack) -> None:
    flags = ["--instance", "2", "--port", str(stack.port)]
    start = f"agentmemory start --detach --instance 2 --port {stack.port}"

    status = run(stack, "status", *flags)
    assert status.returncode == 1 and f"start it with: {start}" in status.stdout

    search = run(stack, "search", "jwt", *flags)
    assert search.returncode == 1 and start in search.stderr

    doctor = run(stack, "doctor", *flags)
    assert doctor.returncode == 1 and f"fix: {start}" in doctor.stdout
    assert f"agentmemory connect claude-code --with-hooks --instance 2 --port {stack.port}" in (
        doctor.stdout
    )

    data_dir = ["--data-dir", str(stack.data_dir), "--port", str(stack.port)]
    remember = run(stack, "remember", "a fact", *data_dir)
    assert remember.returncode == 1
    assert f"start --detach --port {stack.port} --data-dir {stack.data_dir}" in remember.stderr


def test_url_and_agentmemory_url_reach_the_server_by_rest(stack: CliStack) -> None:
    stack.start()
    # No instance flags: the default instance (port 3111) is not the one running.
    saved = run(stack, "remember", "Deploys go through the staging cluster", "--url", stack.url)
    assert saved.returncode == 0, saved.stderr
    assert saved.stdout.startswith("saved memory mem_")

    found = run(stack, "search", "staging cluster", "--url", stack.url, "--json")
    assert found.returncode == 0 and "staging cluster" in found.stdout

    by_env = {**stack.env, "AGENTMEMORY_URL": stack.url}
    status = json.loads(run(stack, "status", "--json", env=by_env).stdout)
    assert status["running"] is True and status["counts"]["memories"] == 1
    assert status["team"]["peers"] == []
    text = run(stack, "status", env=by_env)
    assert text.returncode == 0 and "1 memory" in text.stdout
    assert "no peers linked" in text.stdout

    doctor = run(stack, "doctor", "--url", stack.url)
    assert doctor.returncode == 0, doctor.stdout
    assert f"{stack.url}/agentmemory/livez" in doctor.stdout

    nobody = f"http://127.0.0.1:{free_port_block()}"
    down = run(stack, "search", "staging", "--url", nobody)
    assert down.returncode == 1 and f"not reachable at {nobody}" in down.stderr
    assert "agentmemory start" not in down.stderr  # another machine's server: not ours to start
    assert run(stack, "status", "--url", nobody).returncode == 1


def test_doctor_exits_0_when_healthy_and_1_with_the_fix(stack: CliStack) -> None:
    stack.start()
    flags = f"--port {stack.port} --data-dir {stack.data_dir}"

    healthy = stack.cli("doctor", check=False)  # no agent connected: nothing to judge
    assert healthy.returncode == 0, healthy.stdout
    assert f"next: agentmemory connect claude-code --with-hooks {flags}" in healthy.stdout

    stack.cli("connect", "codex", "--with-hooks")  # Claude Code is not the user's choice
    codex_only = stack.cli("doctor", check=False)
    assert codex_only.returncode == 0, codex_only.stdout
    assert "FAIL" not in codex_only.stdout and "codex hooks: 6 installed" in codex_only.stdout

    chosen = stack.cli("doctor", "--agent", "claude-code", check=False)
    assert chosen.returncode == 1
    assert f"fix: agentmemory connect claude-code --with-hooks {flags}" in chosen.stdout

    # Hooks left pointing at another port block do not reach this instance.
    other = free_port_block()
    assert run(stack, "connect", "codex", "--with-hooks", "--port", str(other)).returncode == 0
    astray = stack.cli("doctor", check=False)
    assert astray.returncode == 1 and f"send to http://127.0.0.1:{other}" in astray.stdout
    assert f"fix: agentmemory connect codex --with-hooks {flags}" in astray.stdout

    stack.cli("connect", "codex", "--with-hooks")
    stack.cli("stop")
    stopped = stack.cli("doctor", check=False)
    assert stopped.returncode == 1
    assert f"fix: agentmemory start --detach {flags}" in stopped.stdout


def test_remember_confirms_in_one_line_and_files_under_the_cwd_project(stack: CliStack) -> None:
    stack.start()
    target = ["--data-dir", str(stack.data_dir), "--port", str(stack.port)]
    src = stack.project_dir / "src" / "billing"
    src.mkdir(parents=True)

    # Below the git root, as a hook run from there names it.
    saved = run(stack, "remember", "Invoices are rounded half-even", *target, cwd=src)
    assert saved.returncode == 0, saved.stderr
    lines = saved.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("saved memory mem_")
    assert "project payments-svc" in lines[0]

    raw = run(
        stack, "remember", "Refunds need two approvals", "--project", "ops", "--json", *target
    )
    reply = json.loads(raw.stdout)
    assert reply["memory"]["project"] == "ops" and reply["memory"]["id"] in raw.stdout

    with stack.rest() as c:
        memories = c.get("/agentmemory/export").json()["memories"]
    projects = {m["content"]: m["project"] for m in memories}
    assert projects == {
        "Invoices are rounded half-even": "payments-svc",
        "Refunds need two approvals": "ops",
    }

    # Search explains itself: rows best first, relevance in [0, 1], an empty result says so.
    found = run(stack, "search", "invoices rounded half-even", *target, "--json")
    hits = json.loads(found.stdout)["results"]
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True) and 0 < scores[0] <= 1
    assert hits[0]["record"]["content"] == "Invoices are rounded half-even"
    table = run(stack, "search", "invoices rounded half-even", *target).stdout
    assert "relevance" in table and f"{scores[0]:.2f}" in table
    assert "Invoices are rounded" in table
    empty = run(stack, "search", "zzqx unmatched words", *target)
    assert empty.returncode == 0 and "nothing in memory matches" in empty.stdout
