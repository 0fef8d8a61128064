"""The scrubber: every secret shape becomes [REDACTED:<kind>], ordinary text survives."""

from __future__ import annotations

import pytest

from functions.memory.scrub import scrub, scrub_value
from tests.memory.samples import SECRETS, Planted


@pytest.mark.parametrize("planted", SECRETS, ids=lambda p: f"{p.kind}:{p.needle[:12]}")
def test_each_secret_kind_is_redacted_with_its_kind(planted: Planted) -> None:
    out = scrub(planted.text)
    assert planted.needle not in out
    assert f"[REDACTED:{planted.kind}]" in out


def test_all_secrets_in_one_text_are_redacted() -> None:
    text = "\n".join(p.text for p in SECRETS)
    out = scrub(text)
    for p in SECRETS:
        assert p.needle not in out


def test_ordinary_code_and_prose_are_left_alone() -> None:
    text = (
        "def tokenize(text: str) -> list[str]:\n"
        "    max_tokens = len(text)  # count tokens\n"
        "Edited src/auth/login.py and ran pytest -q: 12 passed\n"
        "https://github.com/nats-io/nats.py/blob/main/README.md\n"
        "skip-worktree sk-short is fine"
    )
    assert scrub(text) == text


def test_url_credentials_keep_scheme_and_host() -> None:
    assert scrub("https://bob:s3cretpw@example.com/x") == (
        "https://[REDACTED:url_credentials]@example.com/x"
    )


def test_unterminated_private_block_redacts_to_the_end() -> None:
    assert scrub("a <private>never closed secret") == "a [REDACTED:private]"


def test_scrub_is_idempotent() -> None:
    once = scrub("\n".join(p.text for p in SECRETS))
    assert scrub(once) == once


def test_structured_values_are_scrubbed_including_secret_named_keys() -> None:
    value = {
        "command": "curl -H 'Authorization: Bearer plantedBearerTok3n0123456789'",
        "env": {"password": "hunter2", "DEBUG": "1", "flags": [True, 3]},
        "args": ["--key", "AKIAPLANTED0123456AB"],
    }
    out = scrub_value(value)
    flat = repr(out)
    assert "hunter2" not in flat
    assert "plantedBearerTok3n0123456789" not in flat
    assert "AKIAPLANTED0123456AB" not in flat
    assert out["env"]["DEBUG"] == "1"
    assert out["env"]["flags"] == [True, 3]
