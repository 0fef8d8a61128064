"""Synthetic compression: type, title, files, concepts and importance from hook data."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from functions.kernel.scrub import without_markers
from functions.memory.compress import (
    _ERROR_NAME,
    _ERROR_NAME_HINTS,
    _EXT_LANG,
    _FAILURE_WORDS,
    _FILE_KEYS,
    _JSON_TEXT,
    _STOP,
    BARE_FILES,
    KNOWN_NAMES,
    _concepts,
    _files,
    _strings_of_cut_json,
    compress,
    content_of,
    paths_in_text,
)

pytestmark = pytest.mark.unit


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
# A name is a stem, any dotted parts and an extension (`refresh.test.ts`), or a known name
# (`Dockerfile`, `.gitignore`); a path is kept when it has a '/' or is a bare known file.
_REFERENCE_NAME = "|".join(re.escape(n) for n in sorted(KNOWN_NAMES, key=lambda n: (-len(n), n)))
_REFERENCE_PATH = re.compile(
    r"(?<![\w/.-])((?:\.{0,2}/)?(?:[\w.-]+/)*"
    rf"(?:\.?[\w-]+(?:\.[\w-]+)*\.[A-Za-z0-9]{{1,8}}|{_REFERENCE_NAME}))\b"
)


def _reference_paths(text: str) -> list[str]:
    return [
        m.group(1)
        for m in _REFERENCE_PATH.finditer(text)
        if "/" in m.group(1) or m.group(1) in BARE_FILES
    ]


_PATH_TEXT = st.lists(
    st.sampled_from(
        [
            *"ab_-./ :é1\n'\"(",
            *("py", "src/", "x.ts", "../", ".d", ".test", ".spec", "tsx", "Makefile"),
            *("Dockerfile", "file", ".env", ".gitignore", "package.json", "go.mod"),
        ]
    )
).map("".join)


@settings(max_examples=600, deadline=None)
@given(_PATH_TEXT)
def test_path_scan_finds_what_the_lookbehind_search_finds(text: str) -> None:
    assert paths_in_text(text) == _reference_paths(text)


def test_every_known_name_is_one_the_token_filter_keeps() -> None:
    # paths_in_text looks for known names only in a text holding "file" or "/."
    assert all(n.startswith(".") or n.endswith("file") for n in KNOWN_NAMES)
    assert all(n.endswith("file") for n in BARE_FILES)


def test_file_names_are_extracted_whole() -> None:
    text = (
        "FAIL test/refresh.test.ts and src/types/index.d.ts, see ./ui/Button.spec.tsx; "
        "edited docker/Dockerfile, the Makefile, .github/workflows/ci.yml and "
        "config/.eslintrc.json, a/.gitignore, lib/jquery-3.6.0.min.js. "
        "Not files: node.js, e.g. v1.2, example.com, ~/.config, src/components, profile"
    )
    assert paths_in_text(text) == [
        "test/refresh.test.ts",
        "src/types/index.d.ts",
        "./ui/Button.spec.tsx",
        "docker/Dockerfile",
        "Makefile",
        ".github/workflows/ci.yml",
        "config/.eslintrc.json",
        "a/.gitignore",
        "lib/jquery-3.6.0.min.js",
    ]
    c = compress("prompt_submit", {"prompt": "why does test/refresh.test.ts fail?"})
    assert c.files == ["test/refresh.test.ts"]
    assert "typescript" in c.concepts


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
    st.text(alphabet="ab \r\u2028é\t\x0b\x1c\x1f\x85\xa0", max_size=400),
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


# The literal gates search UTF-8 bytes with a leftmost automaton: "does any word occur?"
# must be the plain substring answer, for any text.
@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["Error", "error", "FAILED", "fail", "panic", "ENOENT", "Exc", "é", " "])
    ).map("".join)
)
def test_literal_gates_are_substring_tests(text: str) -> None:
    for gate, words in (
        (_ERROR_NAME_HINTS, ["Error", "Exception", "Traceback", "panic", "FAILED", "ENOENT"]),
        (_FAILURE_WORDS, ["error", "fail", "traceback", "exception", "fatal", "panic"]),
    ):
        found = bool(gate.find_matches_as_indexes(text.encode()))
        assert found == any(w in text for w in words)


def _reference_concepts(tool: str, files: list[str], texts: list[str]) -> list[str]:
    """The definition: an ordered list, every candidate lower-cased, the 8 commonest
    non-stop words by Counter.most_common (ties in order of first appearance)."""
    out: list[str] = []

    def add(c: str) -> None:
        c = c.lower()
        if c and c not in out:
            out.append(c)

    for f in files:
        ext = f.rsplit(".", 1)[-1].lower() if "." in f.rsplit("/", 1)[-1] else ""
        if ext in _EXT_LANG:
            add(_EXT_LANG[ext])
    joined = without_markers("\n".join(t[:1000] for t in texts)[:2500])
    for m in _ERROR_NAME.finditer(joined):
        add(m.group(1))
    if tool:
        add(tool)
    counts = Counter(re.findall(r"[A-Za-z][A-Za-z0-9_]{3,}", joined.lower()))
    for w in list(counts):
        if w in _STOP:
            del counts[w]
    for w, _n in counts.most_common(8):
        if len(out) >= 12:
            break
        add(w)
    return out[:12]


_CONCEPT_TEXT = st.lists(
    st.sampled_from(
        [
            *("alpha", "beta", "gamma", "Delta", "this", "that", "KeyError", "panic", "x.py"),
            *("é", " ", "\n", "1abcd", "_init", "[REDACTED:aws_access_key]", "a/b.go", "FAILED"),
            "K\u212aelvin",
        ]
    ),
    max_size=200,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["", "Bash", "mcp__X__Read", "alpha", "İ"]),
    st.lists(st.sampled_from(["a/b.py", "c.TS", "d/e", "x.y/z", "f.rs", "g.unknown"]), max_size=14),
    st.lists(_CONCEPT_TEXT, max_size=4),
)
def test_concepts_match_their_definition(tool: str, files: list[str], texts: list[str]) -> None:
    assert _concepts(tool, files, texts) == _reference_concepts(tool, files, texts)


def _reference_files(tool_input: Any, texts: list[str]) -> list[str]:
    """The definition: names from the input's file keys, else the paths in each text's first
    2,000 characters; first occurrences, no redaction markers, shorter than 400, at most 20."""
    found: list[str] = []
    if isinstance(tool_input, dict):
        for key in _FILE_KEYS:
            v = tool_input.get(key)
            if isinstance(v, str) and v:
                found.append(v)
            elif isinstance(v, list):
                found.extend(x for x in v if isinstance(x, str) and x)
        edits = tool_input.get("edits")
        if isinstance(edits, list):
            for e in edits:
                if isinstance(e, dict) and isinstance(e.get("file_path"), str):
                    found.append(e["file_path"])
    if not found:
        for t in texts:
            found.extend(_reference_paths(t[:2000]))
    out: list[str] = []
    for f in found:
        if f not in out and "[REDACTED" not in f and len(f) < 400:
            out.append(f)
    return out[:20]


_PATHY = st.lists(
    st.sampled_from(["src/", "a", "b", ".py", ".", "/", "-", "_", " ", "\n", ":", "../", "é"])
    | st.integers(0, 30).map(lambda n: f"d{n}/f{n}.ts ")
    | st.integers(380, 400).map(lambda n: "p" * n + "/q.c"),
    max_size=120,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.none(),
        st.just("text"),
        st.fixed_dictionaries(
            {},
            optional={
                "file_path": st.sampled_from(["a.py", "", "[REDACTED:x]", "p" * 400]),
                "paths": st.lists(st.sampled_from(["a.py", "b.py", "", 3])),
                "edits": st.lists(st.sampled_from([{"file_path": "e.py"}, {"file_path": 1}, 2])),
                "command": st.just("ls"),
            },
        ),
    ),
    st.lists(_PATHY, max_size=4),
)
def test_files_match_their_definition(tool_input: Any, texts: list[str]) -> None:
    assert _files(tool_input, texts) == _reference_files(tool_input, texts)


# ---- content, not envelope: JSON keys and escapes are not what a payload says ----------
_ENVELOPE = {"stdout", "stderr", "interrupted", "isimage", "file_path", "old_string"}
_ENVELOPE |= {"new_string", "filepath", "oldstring", "newstring", "structuredpatch"}
_ENVELOPE |= {"usermodified", "replaceall", "numlines", "startline", "totallines"}


def test_concepts_and_files_come_from_the_content_not_the_json_envelope() -> None:
    bash = compress(
        "post_tool_use",
        {
            "tool_name": "Bash",
            "tool_input": {"command": "npm test", "description": "run the suite"},
            # the hooks send a tool response as JSON text
            "tool_output": json.dumps(
                {
                    "stdout": "PASS test/refresh.test.ts\nrefresh rotates tokens\n",
                    "stderr": "warning: jest config\n",
                    "interrupted": False,
                    "isImage": False,
                }
            ),
        },
    )
    assert bash.files == ["test/refresh.test.ts"]  # not "ntest/refresh.test" after a \n
    assert not _ENVELOPE & set(bash.concepts), bash.concepts
    assert {"refresh", "rotates", "tokens", "typescript"} <= set(bash.concepts)
    assert bash.narrative.endswith("Output: PASS test/refresh.test.ts")

    path = "src/auth/refresh.ts"
    edit = compress(
        "post_tool_use",
        {
            "tool_name": "Edit",
            "tool_input": {"file_path": path, "old_string": "rotate()", "new_string": "renew()"},
            "tool_output": json.dumps(
                {
                    "filePath": path,
                    "oldString": "rotate()",
                    "newString": "renew()",
                    "structuredPatch": [{"oldStart": 3, "lines": ["-rotate()", "+renew()"]}],
                    "userModified": False,
                    "replaceAll": False,
                }
            ),
        },
    )
    assert edit.files == [path]
    assert not _ENVELOPE & set(edit.concepts), edit.concepts
    assert {"rotate", "renew"} <= set(edit.concepts)
    # the raw text keeps the payload as sent
    assert '"interrupted": false' in bash.raw


def test_a_response_cut_by_the_hook_still_gives_its_content() -> None:
    whole = json.dumps({"stdout": "compiled src/app/main.rs\n" * 50, "stderr": "", "code": 0})
    cut = whole[:300] + "\n…[truncated 999 chars]"  # what the hook's size cap sends
    c = compress("post_tool_use", {"tool_name": "Bash", "tool_input": {"command": "cargo b"},
                                   "tool_output": cut})  # fmt: skip
    assert c.files == ["src/app/main.rs"]
    assert not {"stdout", "stderr", "truncated", "chars"} & set(c.concepts), c.concepts
    assert "compiled" in c.concepts


_LEAF = st.text(alphabet='ab é\n\t"\\/😀\x01', max_size=12)
_JSON = st.recursive(
    _LEAF | st.integers() | st.booleans() | st.none(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(sorted(_ENVELOPE)), inner, max_size=4)
    ),
    max_leaves=12,
)


def _leaves(v: Any) -> list[str]:
    if isinstance(v, str):
        return [v] if v else []
    if isinstance(v, dict):
        return [s for x in v.values() for s in _leaves(x)]
    if isinstance(v, list):
        return [s for x in v for s in _leaves(x)]
    return []


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(_ENVELOPE)), _JSON, min_size=1) | st.lists(_JSON),
       st.booleans())  # fmt: skip
def test_content_of_json_is_its_string_values(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    expected = "\n".join(_leaves(value))
    assert content_of(value) == expected
    if _JSON_TEXT.match(text):  # what content_of reads as JSON text
        assert content_of(text) == expected
        # the reader for cut text agrees with the decoder on whole text
        out: list[str] = []
        _strings_of_cut_json(text, out)
        assert "\n".join(out) == expected


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(_ENVELOPE)), _JSON, min_size=1), st.data())
def test_content_of_cut_json_holds_no_key(value: Any, data: st.DataObject) -> None:
    text = json.dumps(value)
    cut = text[: data.draw(st.integers(1, len(text)))]
    said = content_of(cut + "\n…[truncated 5 chars]")
    # values are drawn from letters no key is made of, so any key in it came from the envelope
    assert not [k for k in _ENVELOPE if k in said.lower()]
    said.encode()  # no lone surrogate from an escape cut in half


def test_a_failed_call_input_sent_as_json_text_is_read_as_its_fields() -> None:
    c = compress(
        "post_tool_failure",
        {
            "tool_name": "Edit",
            "tool_input": json.dumps({"file_path": "src/types/api.d.ts", "old_string": "x"}),
            "error": "String to replace not found in file.",
        },
    )
    assert c.files == ["src/types/api.d.ts"]
    assert c.title == "Edit failed: String to replace not found in file."
    assert not _ENVELOPE & set(c.concepts), c.concepts
