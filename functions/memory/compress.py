"""Synthetic compression without any LLM: an observation's type, title, narrative, files,
concepts and importance, derived from the hook, the tool name and the (scrubbed) data."""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

import ahocorasick_rs
import msgspec

from functions.kernel.scrub import without_markers

RAW_CAP = 8000
NARRATIVE_CAP = 600
TITLE_CAP = 120
_MAX_FILES = 20
_MAX_CONCEPTS = 12


class Compressed(msgspec.Struct, kw_only=True):
    type: str
    title: str
    narrative: str
    facts: list[str]
    concepts: list[str]
    files: list[str]
    importance: int
    tool_name: str
    raw: str


_HOOK_TYPES = {
    "prompt_submit": "prompt",
    "post_tool_failure": "error",
    "session_start": "session",
    "session_end": "session",
    "stop": "conversation",
    "pre_compact": "conversation",
    "subagent_start": "subagent",
    "subagent_stop": "subagent",
    "notification": "notification",
    "task_completed": "task",
}

# Tool names across hosts (Claude Code, Codex, Cursor, Gemini CLI, Copilot, VS Code,
# OpenCode, Antigravity, MCP servers), lower-cased.
_TOOL_TYPES: dict[str, str] = {
    **dict.fromkeys(
        ("read", "view", "notebookread", "read_file", "cat", "open", "read_many_files"),
        "file_read",
    ),
    **dict.fromkeys(("view_file", "view_line_range", "view_code_item"), "file_read"),
    **dict.fromkeys(
        ("write", "create", "write_file", "create_file", "write_to_file"), "file_write"
    ),
    **dict.fromkeys(
        ("edit", "multiedit", "notebookedit", "str_replace", "apply_patch", "edit_file", "patch"),
        "file_edit",
    ),
    **dict.fromkeys(("replace", "replace_file_content", "propose_code"), "file_edit"),
    **dict.fromkeys(
        ("replace_string_in_file", "multi_replace_string_in_file", "insert_edit_into_file"),
        "file_edit",
    ),
    **dict.fromkeys(
        ("bash", "shell", "exec_command", "run_command", "terminal", "local_shell"), "command"
    ),
    **dict.fromkeys(
        ("run_shell_command", "powershell", "runinterminal", "run_in_terminal"), "command"
    ),
    **dict.fromkeys(
        ("grep", "glob", "ls", "search", "find", "list_dir", "codebase_search"), "search"
    ),
    **dict.fromkeys(
        ("list", "search_file_content", "grep_search", "find_by_name", "list_directory"), "search"
    ),
    **dict.fromkeys(("file_search", "semantic_search"), "search"),
    **dict.fromkeys(("webfetch", "websearch", "fetch", "web_search", "browse"), "web"),
    **dict.fromkeys(("web_fetch", "google_web_search", "read_url_content", "fetch_webpage"), "web"),
    **dict.fromkeys(("task", "agent", "subagent"), "subagent"),
    **dict.fromkeys(("todowrite", "todoread", "update_plan"), "task"),
}

_IMPORTANCE = {
    "error": 7,
    "decision": 8,
    "file_write": 6,
    "file_edit": 6,
    "task": 6,
    "prompt": 5,
    "command": 4,
    "subagent": 4,
    "web": 4,
    "response": 4,
    "file_read": 3,
    "search": 3,
    "notification": 3,
    "conversation": 3,
    "session": 2,
    "other": 3,
}

_FILE_KEYS = (
    "file_path",
    "filepath",
    "filePath",
    "path",
    "notebook_path",
    "target_file",
    "filename",
    "file",
    "paths",
    "files",
)
# Files known by a name without an extension: build, container and task files (each ends
# in "file", which paths_in_text relies on), and dotfiles. After a directory they are
# matched like any file name; the first kind also bare, with no directory in front (any
# other bare `x.y` in prose is too often not a file: node.js, e.g., v1.2, example.com).
BARE_FILES = frozenset(
    (
        *("Dockerfile", "Containerfile", "Makefile", "makefile", "GNUmakefile", "Rakefile"),
        *("Gemfile", "Procfile", "Jenkinsfile", "Vagrantfile", "Brewfile", "Justfile"),
        *("justfile", "Pipfile", "Caddyfile", "Earthfile", "Tiltfile", "Snakefile"),
    )
)
KNOWN_NAMES = BARE_FILES | {
    *(".gitignore", ".gitattributes", ".dockerignore", ".editorconfig", ".env", ".npmrc"),
    *(".nvmrc", ".prettierrc", ".eslintrc", ".bashrc", ".zshrc", ".python-version"),
}
# A path mentioned in text starts where a run of path characters ([\w./-]) starts (the
# look-behind of the definition in tests/memory/test_compress.py), so each maximal run holds
# at most one, matched at its start: a directory part, then a file name, either with an
# extension (a stem, any further dotted parts, the extension: `refresh.test.ts`, `index.d.ts`,
# `.eslintrc.json`) or a known name. It is kept if it has a '/', or is one of BARE_FILES.
# The definition tries the options with a '/' first (a directory part is optional and
# greedy), so `_SLASH_RUN` (those options only: the directory part required) gives the
# definition's match of a run where that has a '/'; where it has none, `_ANY_RUN` tries the
# name alone next (group 2). A text naming no known name needs neither the known names nor
# the bare option: `_EXT_RUN`. Each takes a whole run at each step: its path and the rest
# of the run, or the run without a path.
_EXTENDED = r"\.?[\w-]+(?:\.[\w-]+)*\.[A-Za-z0-9]{1,8}"
_KNOWN = "|".join(re.escape(n) for n in sorted(KNOWN_NAMES, key=lambda n: (-len(n), n)))
_NAMED = rf"(?:{_EXTENDED}|{_KNOWN})\b"
_DIRS = r"(?:\.{0,2}/(?:[\w.-]+/)*|(?:[\w.-]+/)+)"
_EXT_RUN = re.compile(rf"({_DIRS}{_EXTENDED}\b)[\w./-]*|[\w./-]+")
_ANY_RUN = re.compile(rf"({_DIRS}{_NAMED})[\w./-]*|({_NAMED})[\w./-]*|[\w./-]+")


_EXT_LANG = {
    "py": "python",
    "ts": "typescript",
    "tsx": "typescript",
    "js": "javascript",
    "jsx": "javascript",
    "mjs": "javascript",
    "go": "go",
    "rs": "rust",
    "java": "java",
    "kt": "kotlin",
    "rb": "ruby",
    "c": "c",
    "h": "c",
    "cpp": "cpp",
    "cs": "csharp",
    "sh": "shell",
    "sql": "sql",
    "md": "markdown",
    "yaml": "yaml",
    "yml": "yaml",
    "toml": "toml",
    "json": "json",
    "html": "html",
    "css": "css",
}
_ERROR_NAME = re.compile(r"\b([A-Z][A-Za-z]*(?:Error|Exception)|Traceback|panic|FAILED|ENOENT)\b")


def _any_of(words: list[str]) -> ahocorasick_rs.BytesAhoCorasick:
    """An automaton that answers "does any of `words` occur?" on UTF-8 bytes: the words are
    ASCII, so they occur in the bytes exactly when they occur in the str. A leftmost search
    finds the first occurrence if there is one, and can use the crate's SIMD prefilter
    (~15x faster here than the standard search, which cannot)."""
    return ahocorasick_rs.BytesAhoCorasick(
        [w.encode() for w in words],
        matchkind=ahocorasick_rs.MatchKind.LeftmostFirst,
        implementation=ahocorasick_rs.Implementation.DFA,
    )


# Literal gates in front of the two error regexes: most outputs hold none of these words, and
# one automaton pass is far cheaper than a regex whose every capital letter is a candidate.
_ERROR_NAME_HINTS = _any_of(["Error", "Exception", "Traceback", "panic", "FAILED", "ENOENT"])
# Matched against lower-cased text, where A-Z never occur: the definition's
# `[A-Za-z][A-Za-z0-9_]{3,}` with smaller classes, ~10% faster.
_WORD = re.compile(r"[a-z][a-z0-9_]{3,}+")
_STOP = frozenset(
    """this that with from have will would should could what when where which there their
    about into than then them they were been being also just only some such more most other
    your yours file files line lines true false none null self return import def class
    for while else elif pass none print test tests data value values name type text
    please make sure need want like using used use does done here first last each every
    passed failed redacted""".split()
)
# str.strip() and str.splitlines() semantics: `\s` is str.isspace(), and these are the
# line boundaries splitlines() knows (all of them are whitespace).
_NON_SPACE = re.compile(r"\S")
_LINE_BREAK = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# Matched against lower-cased text: IGNORECASE alternations cost ~20x more in `re`.
_FAILURE_HINT = re.compile(r"\b(?:error|failed|failure|traceback|exception|fatal|panic)\b")
_FAILURE_WORDS = _any_of(["error", "fail", "traceback", "exception", "fatal", "panic"])
_KNOWN_HINTS = _any_of(["file", "/."])


def _looks_failed(text: str) -> bool:
    lowered = text.lower()
    return bool(_FAILURE_WORDS.find_matches_as_indexes(lowered.encode())) and bool(
        _FAILURE_HINT.search(lowered)
    )


# What json.dumps(value, ensure_ascii=False, sort_keys=True) builds on every call.
_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True)


def as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return _JSON.encode(value)
    except (TypeError, ValueError):
        return str(value)


# JSON text of an object or array with string keys or values (a tool response as the hooks
# send it), possibly cut short by the hook's size cap.
_JSON_TEXT = re.compile(r'\s*[\[{]\s*[\[{]?\s*"')
# A JSON string literal (unrolled: no alternation per character); an unclosed one runs to
# the end of a cut text.
_JSON_STRING = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"?', re.S)
_BRACKETS = re.compile(r"[\[\]{}]")
_JSON_ESCAPE = re.compile(
    r"\\(?:u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|(.))",
    re.S,
)
# What the hooks append to a text they cut (workers/hooks/_hookcore.py `truncate`).
_CUT_MARK = re.compile(r"\n…\[truncated \d+ chars\]\Z")
_ESCAPED = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}
_MAX_DEPTH = 32


def _unescape_match(m: re.Match[str]) -> str:
    hi, lo, code, c = m.groups()
    if hi is not None:  # a surrogate pair: one character outside the BMP
        return chr(0x10000 + ((int(hi, 16) - 0xD800) << 10) + int(lo, 16) - 0xDC00)
    if code is not None:
        n = int(code, 16)
        return "" if 0xD800 <= n < 0xE000 else chr(n)  # a lone surrogate is no character
    return _ESCAPED.get(c, c)


def _strings(value: Any, out: list[str], depth: int = 0) -> None:
    """The non-empty strings inside a decoded JSON value, in order (strings in a container
    are taken in its loop: one call per container, not per item)."""
    if isinstance(value, str):
        if value:
            out.append(value)
        return
    items: Iterable[Any]
    if isinstance(value, dict):
        items = value.values()
    elif isinstance(value, list):
        items = value
    else:
        return
    if depth >= _MAX_DEPTH:
        return
    for v in items:
        if isinstance(v, str):
            if v:
                out.append(v)
        elif isinstance(v, dict | list):
            _strings(v, out, depth + 1)


def _strings_of_cut_json(text: str, out: list[str]) -> None:
    """The string values of JSON text that does not parse (cut by a size cap): every string
    literal that is not a key, unescaped. A key is a literal right after `{`, or after `,`
    inside an object: the brackets between literals say which container is open."""
    open_: list[str] = []
    pos = 0
    for m in _JSON_STRING.finditer(text, 0, RAW_CAP):
        gap = text[pos : m.start()]
        pos = m.end()
        for b in _BRACKETS.findall(gap):
            if b in "[{":
                open_.append(b)
            elif open_:
                open_.pop()
        if open_ and open_[-1] == "{" and gap.rstrip()[-1:] in ("{", ","):
            continue  # a key
        body = m.group(1)
        if "\\" in body:
            body = _JSON_ESCAPE.sub(_unescape_match, body)
        if body:
            out.append(body)


def content_of(value: Any) -> str:
    """What a payload says, without its envelope: the string values of a JSON structure,
    or of JSON text (hooks send tool responses as JSON text), one per line; its keys,
    numbers and booleans (stdout, file_path, interrupted: false) are not content. Any other
    text is its own content."""
    out: list[str] = []
    if isinstance(value, str):
        if value.endswith(" chars]"):
            value = _CUT_MARK.sub("", value)
        if not _JSON_TEXT.match(value):
            return str(value)
        try:
            decoded = _decode_json(value)
        except (msgspec.DecodeError, RecursionError):  # cut short, or nested past reason
            _strings_of_cut_json(value, out)
        else:
            _strings(decoded, out)
    elif isinstance(value, dict | list):
        _strings(value, out)
    else:
        return as_text(value)
    return "\n".join(out)


_decode_json = msgspec.json.Decoder().decode


def _first_line(text: str, cap: int = 100) -> str:
    """The first line that is not blank, stripped, capped at `cap` characters.

    Every line boundary is whitespace, so that line is the one holding the text's first
    non-space character: it starts there and ends at the next boundary. Two searches cost
    about half of splitting a 1 KB head into a string per line."""
    first = _NON_SPACE.search(text)
    if first is None:
        return ""
    start = first.start()
    end = _LINE_BREAK.search(text, start)
    line = text[start : end.start() if end is not None else len(text)].rstrip()
    return line if len(line) <= cap else line[: cap - 1] + "…"


def paths_in_text(text: str) -> list[str]:
    """Files named in free text, in order of appearance: paths with a directory part, and
    the bare names of BARE_FILES."""
    # Every known name ends in "file" or is a dotfile (after a directory: "/.").
    known = bool(_KNOWN_HINTS.find_matches_as_indexes(text.encode()))
    if not known and "/" not in text:
        return []
    # No whitespace is a path character, so every run lies inside one whitespace-separated
    # token. A kept path holds a '/' and a '.' (its extension), or a known name, which holds
    # "file" or a '.': only such tokens are scanned (joined by a space, which no run crosses),
    # ~40% less than every run.
    if not known:
        tokens = " ".join([t for t in text.split() if "/" in t and "." in t])
        return list(filter(None, _EXT_RUN.findall(tokens)))
    tokens = " ".join([t for t in text.split() if "file" in t or ("/" in t and "." in t)])
    return [
        slash or bare for slash, bare in _ANY_RUN.findall(tokens) if slash or bare in BARE_FILES
    ]


def _files(tool_input: Any, texts: list[str]) -> list[str]:
    found: list[str] = []
    if isinstance(tool_input, dict):
        for key in _FILE_KEYS:
            v = tool_input.get(key)
            if v is None:  # most keys: skip the two type checks
                continue
            if isinstance(v, str) and v:
                found.append(v)
            elif isinstance(v, list):
                found.extend(x for x in v if isinstance(x, str) and x)
        edits = tool_input.get("edits")
        if isinstance(edits, list):
            for e in edits:
                if isinstance(e, dict) and isinstance(e.get("file_path"), str):
                    found.append(e["file_path"])
    # The first 20 distinct usable names, in order (a dict is an ordered set); texts after
    # the one that completes them are not scanned.
    if found:
        usable = [f for f in dict.fromkeys(found) if "[REDACTED" not in f and len(f) < 400]
        return usable[:_MAX_FILES]
    out: dict[str, None] = {}
    for t in texts:
        # No '[' is a path character: a path found in text never holds a redaction marker.
        out.update(dict.fromkeys([f for f in paths_in_text(t[:2000]) if len(f) < 400]))
        if len(out) >= _MAX_FILES:
            break
    return list(out)[:_MAX_FILES]


def _concepts(tool: str, files: list[str], texts: list[str]) -> list[str]:
    out: dict[str, None] = {}  # lower-cased concepts, an ordered set
    for f in files:
        _, dot, ext = f.rpartition(".")
        if dot and "/" not in ext:  # the extension of the last path component, if it has one
            # the keys are lower case: most extensions already are, and need no lower()
            lang = _EXT_LANG.get(ext) or _EXT_LANG.get(ext.lower())
            if lang is not None:
                out[lang] = None
    # A bounded sample is enough for a few concepts, and keeps ingest cost flat for 8 KB
    # tool outputs.
    joined = without_markers("\n".join([t[:1000] for t in texts])[:2500])
    if _ERROR_NAME_HINTS.find_matches_as_indexes(joined.encode()):
        for name in _ERROR_NAME.findall(joined):
            out[name.lower()] = None
    if tool:
        out[tool.lower()] = None
    if len(out) < _MAX_CONCEPTS:
        # The 8 most frequent words that are not stop words, ties in order of first
        # appearance: what Counter.most_common(8) gives after deleting the stop words, as
        # one stable sort instead of a heap of (count, word) pairs built in Python.
        counts = Counter(_WORD.findall(joined.lower()))
        taken = 0
        for w in sorted(counts, key=counts.__getitem__, reverse=True):
            if w in _STOP:
                continue
            if taken == 8 or len(out) >= _MAX_CONCEPTS:
                break
            taken += 1
            out[w] = None  # already lower case: the words are ASCII
    return list(out)[:_MAX_CONCEPTS]


def _summary_of_input(tool_input: Any, input_text: str) -> str:
    """`input_text` is `as_text(tool_input)`, already made by the caller."""
    if isinstance(tool_input, dict):
        for key in ("command", "cmd", "query", "pattern", "url", "prompt", "description"):
            v = tool_input.get(key)
            if isinstance(v, str) and v:
                return v
            if isinstance(v, list) and v:
                return " ".join(str(x) for x in v)
    return input_text


def compress(hook_type: str, data: dict[str, Any]) -> Compressed:
    """`data` must already be scrubbed: everything returned is derived from it."""
    tool = str(data.get("tool_name") or "")
    tool_input = data.get("tool_input")
    input_text = as_text(tool_input)
    if isinstance(tool_input, str) and _JSON_TEXT.match(tool_input):
        # hooks send some inputs as JSON text (a failed call's): read its keys as a dict's
        with contextlib.suppress(msgspec.DecodeError, RecursionError):
            parsed = _decode_json(tool_input)
            if isinstance(parsed, dict):
                tool_input = parsed
    output = as_text(data.get("tool_output"))
    error = as_text(data.get("error"))
    prompt = as_text(data.get("prompt"))
    response = as_text(
        data.get("assistant_response")
        or data.get("last_message")
        or data.get("last_assistant_message")  # upstream's Stop hook (and ours)
    )
    message = as_text(data.get("message"))

    obs_type = _HOOK_TYPES.get(hook_type)
    if obs_type is None:
        if tool:
            obs_type = _TOOL_TYPES.get(tool.lower().split("__")[-1], "other")
        elif response:
            obs_type = "response"
        elif prompt:
            obs_type = "prompt"
        else:
            obs_type = "other"
    if error and obs_type != "error":
        obs_type = "error"
    elif obs_type == "conversation" and response:
        obs_type = "response"  # an assistant's turn (imported transcripts carry its text)

    texts = [t for t in (prompt, input_text, output, error, response, message) if t]
    # Files, concepts and the lines shown come from what the payloads say, not from their
    # JSON envelope (its keys and escapes: `stdout`, `file_path`, `\n` before a path).
    said_output = content_of(data.get("tool_output")) if output else ""
    said_error = content_of(data.get("error")) if error else ""
    said_input = content_of(tool_input) if input_text else ""
    said = [t for t in (prompt, said_input, said_output, said_error, response, message) if t]
    files = _files(tool_input, said)
    what = _summary_of_input(tool_input, input_text)
    where = files[0] if files else _first_line(what, 80)

    if obs_type == "prompt":
        title = f"Prompt: {_first_line(prompt)}"
    elif obs_type == "error":
        title = f"{tool or 'Tool'} failed: {_first_line(said_error or said_output)}"
    elif obs_type in ("file_read", "file_write", "file_edit"):
        verb = {"file_read": "Read", "file_write": "Wrote", "file_edit": "Edited"}[obs_type]
        title = f"{verb} {where}"
    elif obs_type == "command":
        title = f"Ran: {_first_line(what, 100)}"
    elif obs_type == "search":
        title = f"{tool or 'Search'}: {_first_line(what, 100)}"
    elif obs_type == "web":
        title = f"{tool or 'Web'}: {_first_line(what, 100)}"
    elif obs_type == "notification":
        title = f"Notification: {_first_line(str(data.get('title') or message))}"
    elif obs_type == "task":
        subject = data.get("task_subject") or _first_line(what)
        title = f"Task: {subject}"
    elif obs_type == "subagent":
        title = f"Subagent {hook_type.removeprefix('subagent_')}: {data.get('agent_type') or tool}"
    elif obs_type == "response":
        title = f"Response: {_first_line(response)}"
    elif obs_type in ("session", "conversation"):
        title = hook_type.replace("_", " ").capitalize()
    else:
        title = f"{tool}: {_first_line(what)}" if tool else hook_type.replace("_", " ")
    title = title if len(title) <= TITLE_CAP else title[: TITLE_CAP - 1] + "…"

    parts: list[str] = []
    if prompt:
        parts.append(f"User asked: {prompt[:300]}")
    if tool:
        parts.append(f"{tool} on {where}." if files else f"{tool}: {_first_line(what, 200)}.")
    if error:
        parts.append(f"Error: {_first_line(said_error, 300)}")
    elif said_output:
        parts.append(f"Output: {_first_line(said_output, 200)}")
    if response:
        parts.append(f"Assistant: {response[:300]}")
    if message:
        parts.append(message[:300])
    narrative = " ".join(parts)[:NARRATIVE_CAP]

    facts: list[str] = []
    if files:
        facts.append("files: " + ", ".join(files[:5]))
    if error:
        facts.append("error: " + _first_line(said_error, 200))

    importance = _IMPORTANCE.get(obs_type, 3)
    if obs_type == "command" and _looks_failed(output[:4000]):
        importance += 2
    if obs_type in ("file_write", "file_edit") and len(files) > 2:
        importance += 1
    importance = max(1, min(10, importance))

    raw = "\n".join(texts)
    if len(raw) > RAW_CAP:
        raw = raw[:RAW_CAP]
    return Compressed(
        type=obs_type,
        title=title,
        narrative=narrative,
        facts=facts,
        concepts=_concepts(tool, files, said),
        files=files,
        importance=importance,
        tool_name=tool,
        raw=raw,
    )
