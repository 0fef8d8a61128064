"""The scrubber: every secret shape becomes [REDACTED:<kind>], ordinary text survives."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from functions.memory.scrub import (
    _ANY_NEEDLE,
    _AUTOMATON,
    _IGNORECASE,
    _NEEDLES,
    _ON_LOWER,
    _PLAN,
    _apply,
    scrub,
    scrub_value,
)
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


# The scrubber's gates are optimisations: a rule runs only if one of its hint needles occurs
# in the lower-cased text, first asked of a leftmost "any needle?" search, then of the
# overlapping search that says which. Both must agree with plain substring tests, and the
# gated scrub with running every rule.
_FRAGMENTS = [
    *(p.text for p in SECRETS),
    *_NEEDLES,
    "sk-ant-",
    "<PRIVATE>",
    "</private>",
    "Token: ",
    "=",
    "'",
    " ",
    "\n",
    "é",
    "İ",
    "\u212a",
    "ab",
    "x" * 30,
    "[REDACTED:private_key]",
]


def _every_rule(text: str) -> str:
    for kind, pattern, group, _needles in _PLAN:
        lowered = text.lower()
        if kind not in _ON_LOWER:
            text = _apply(text, text, kind, pattern, group)
        elif len(lowered) == len(text):
            text = _apply(text, lowered, kind, pattern, group)
        else:
            text = _apply(text, text, kind, _IGNORECASE[kind], group)
    return text


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=12).map("".join))
def test_the_needle_gates_agree_with_substring_tests_and_never_skip_a_rule(text: str) -> None:
    lowered = text.lower().encode()
    present = {i for i, n in enumerate(_NEEDLES) if n.encode() in lowered}
    assert bool(_ANY_NEEDLE.find_matches_as_indexes(lowered)) == bool(present)
    overlapping = _AUTOMATON.find_matches_as_indexes(lowered, overlapping=True)
    assert {i for i, _s, _e in overlapping} == present
    assert scrub(text) == _every_rule(text)


def test_a_secret_named_key_is_redacted_however_often_it_is_seen() -> None:
    # the key's verdict is cached: the second payload must get the same answer
    for _ in range(2):
        out = scrub_value({"api_key": "abc", "Cookie": "x=1", "note": "plain"})
        assert out == {
            "api_key": "[REDACTED:secret_assignment]",
            "Cookie": "[REDACTED:secret_assignment]",
            "note": "plain",
        }
