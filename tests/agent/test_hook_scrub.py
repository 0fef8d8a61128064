"""The hooks' scrubber (workers/hooks/_scrub.py): what the spool writes to disk while the
server is down holds none of the provider corpus, and the script finds the server's rule
set from its own folder without loading `re` for a body with nothing to scrub."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from functions.kernel.secret_rules import RULES_FILE
from tests.memory.secret_corpus import SAMPLES
from workers.hooks import HOOKS_DIR, _delivery
from workers.hooks._hookcore import Settings

pytestmark = pytest.mark.unit


def test_the_spool_holds_no_provider_secret_of_the_corpus(tmp_path: Path) -> None:
    settings = Settings({"HOME": str(tmp_path), "AGENTMEMORY_SPOOL_DIR": str(tmp_path / "s")})
    for i, s in enumerate(SAMPLES):
        body = {
            "eventId": f"c{i}",
            "data": {"tool_input": {"command": s.text}, "tool_output": s.text},
        }
        _delivery.append(settings, "POST", "/agentmemory/observe", body)
    raw = (tmp_path / "s" / "hooks.jsonl").read_text()
    assert [f"{s.provider}: {s.kind}" for s in SAMPLES if s.needle in raw] == []
    assert len(_delivery.read(settings)) == len(SAMPLES)


_PROBE = """
import sys
sys.path.insert(0, sys.argv[1])
import _scrub
clean = _scrub.might_hold_secret("12 passed in 0.2 seconds, 0 failed")
print(clean, "re" in sys.modules)
print(_scrub.scrub_text(sys.argv[2]))
"""


def _probe(folder: Path, text: str) -> list[str]:
    """The probe above, run with `folder` as the hook scripts' folder (as `python3 -S`)."""
    return subprocess.run(
        [os.path.realpath(sys.executable), "-S", "-c", _PROBE, str(folder), text],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": os.environ.get("PATH", "")},
    ).stdout.splitlines()


def test_the_hook_script_loads_the_rule_set_and_loads_re_only_when_needed() -> None:
    stripe = next(s for s in SAMPLES if s.kind == "stripe-access-token")
    out = _probe(HOOKS_DIR, stripe.text)
    assert out[0] == "False False"
    assert stripe.needle not in out[1] and "[REDACTED]" in out[1]


def test_a_plugin_copy_of_the_hooks_folder_alone_still_has_the_rule_set(tmp_path: Path) -> None:
    """Claude Code and Codex install the plugin by copying workers/hooks and nothing else:
    the scrubber there must still have gitleaks' rules (a Stripe key is none of our own
    shapes), and the copy it reads is the server's rule set."""
    copy = tmp_path / "plugin-cache" / "agentmemory"
    shutil.copytree(HOOKS_DIR, copy)
    stripe = next(s for s in SAMPLES if s.kind == "stripe-access-token")
    out = _probe(copy, stripe.text)
    assert stripe.needle not in out[1] and "[REDACTED]" in out[1], out
    assert (copy / "secret_rules.json").read_bytes() == RULES_FILE.read_bytes()
