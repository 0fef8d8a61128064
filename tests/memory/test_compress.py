"""Synthetic compression: type, title, files, concepts and importance from hook data."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from functions.memory.compress import compress, paths_in_text


def test_edit_tool_becomes_a_file_edit_with_the_file_and_language() -> None:
    c = compress(
        "post_tool_use",
        {
            "tool_name": "Edit",
            "tool_input": {"file_path": "src/auth/login.py", "old_string": "a", "new_string": "b"},
            "tool_output": "ok",
        },
    )
    assert c.type == "file_edit"
    assert c.files == ["src/auth/login.py"]
    assert c.title == "Edited src/auth/login.py"
    assert "python" in c.concepts
    assert 1 <= c.importance <= 10


def test_bash_command_title_and_failing_output_raise_importance() -> None:
    ok = compress("post_tool_use", {"tool_name": "Bash", "tool_input": {"command": "ls"}})
    bad = compress(
        "post_tool_use",
        {
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q"},
            "tool_output": "Traceback ...\nAssertionError: boom\n1 failed",
        },
    )
    assert ok.type == bad.type == "command"
    assert bad.title == "Ran: pytest -q"
    assert bad.importance > ok.importance
    assert "assertionerror" in bad.concepts


def test_tool_failure_is_an_error_naming_the_tool() -> None:
    c = compress(
        "post_tool_failure",
        {"tool_name": "Bash", "tool_input": "make", "error": "make: *** No rule to make target"},
    )
    assert c.type == "error"
    assert c.title.startswith("Bash failed: make: ***")
    assert c.importance >= 7


def test_prompt_submit_is_a_prompt_titled_with_its_first_line() -> None:
    c = compress("prompt_submit", {"prompt": "Fix the login redirect bug\nthanks"})
    assert c.type == "prompt"
    assert c.title == "Prompt: Fix the login redirect bug"
    assert "Fix the login redirect bug" in c.narrative


def test_multiedit_collects_every_file_and_unknown_tools_are_other() -> None:
    c = compress(
        "post_tool_use",
        {
            "tool_name": "MultiEdit",
            "tool_input": {"edits": [{"file_path": "a/b.ts"}], "file_path": "a/c.ts"},
        },
    )
    assert set(c.files) == {"a/b.ts", "a/c.ts"}
    assert compress("post_tool_use", {"tool_name": "Mystery"}).type == "other"


def test_mcp_tool_names_map_by_their_last_part_and_paths_come_from_text() -> None:
    c = compress(
        "post_tool_use",
        {"tool_name": "mcp__fs__read_file", "tool_input": "open ./docs/guide.md please"},
    )
    assert c.type == "file_read"
    assert c.files == ["./docs/guide.md"]


def test_raw_is_capped() -> None:
    c = compress("post_tool_use", {"tool_name": "Read", "tool_output": "x" * 50_000})
    assert len(c.raw) <= 8000


# The path scan runs on every tool output: it matches runs of path characters instead of
# searching with a look-behind. The look-behind search is the definition; they must agree.
_REFERENCE_PATH = re.compile(r"(?<![\w/.-])((?:\.{0,2}/)?(?:[\w.-]+/)*[\w-]+\.[A-Za-z0-9]{1,8})\b")


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([*"ab_-./ :é1\n'\"(", "py", "src/", "x.ts", "../"])).map("".join))
def test_path_scan_finds_what_the_lookbehind_search_finds(text: str) -> None:
    expected = [m.group(1) for m in _REFERENCE_PATH.finditer(text) if "/" in m.group(1)]
    assert paths_in_text(text) == expected


def test_failure_words_and_error_names_are_found_behind_their_literal_gates() -> None:
    out = compress(
        "post_tool_use",
        {
            "tool_name": "Bash",
            "tool_input": {"command": "make"},
            "tool_output": "building...\nKeyError: 'x'\nmake: *** [all] Error 2 (fatal)",
        },
    )
    quiet = compress(
        "post_tool_use",
        {"tool_name": "Bash", "tool_input": {"command": "make"}, "tool_output": "all good"},
    )
    assert "keyerror" in out.concepts
    assert out.importance == quiet.importance + 2


def test_a_redaction_marker_is_not_a_concept() -> None:
    c = compress(
        "post_tool_use",
        {
            "tool_name": "Bash",
            "tool_input": {"command": "deploy"},
            "tool_output": "deploy token=[REDACTED:secret_assignment] with [REDACTED:aws_access_key]",
        },
    )
    assert not [x for x in c.concepts if "redacted" in x or "secret_assignment" in x or "aws" in x]
    assert "deploy" in c.concepts


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 1100),
    st.text(alphabet="ab \r\u2028é", max_size=400),
    st.lists(st.sampled_from(["a", " ", "\n", "\r\n", "x" * 300])).map("".join),
)
def test_first_line_from_a_head_is_the_first_line_of_the_whole_text(
    blank: int, line: str, rest: str
) -> None:
    from functions.memory.compress import _first_line

    # blank lines up to and past the 1 KB head, then a line that may straddle its end
    text = " \n" * (blank // 2) + line + "\n" + rest
    whole = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    expected = whole if len(whole) <= 100 else whole[:99] + "…"
    assert _first_line(text) == expected
