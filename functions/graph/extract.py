"""What a record names, typed for the knowledge graph: files, symbols, packages, error codes,
commands and concepts.

There is one entity extractor in the code base, `functions.search.analysis.entities` (the
retrieval graph's); this module only *types* what it finds and adds what the compressor
already recorded (`files`, `concepts`) and the lifecycle already derives (the command head,
the normalised error). So retrieval's graph and the knowledge graph see the same entities.
"""

from __future__ import annotations

import re

from functions.kernel.records import Memory, Observation
from functions.kernel.steps import command_head, command_of, error_key
from functions.search.analysis import entities

Entity = tuple[str, str]
"""(kind, name)"""

MAX_ENTITIES = 12
"""Entities kept per record (files first): a huge tool output must not make a huge star."""

# Lower-cased by `entities`: error codes (E0425, TS2345, ENOENT, ECONNREFUSED, SQLITE_ERROR).
_ERROR_CODE = re.compile(r"^(?:[a-z]{1,6}-?\d{2,6}|e[a-z]{3,}|[a-z]+_[a-z_]*err[a-z_]*)$")
_EXTENSIONS = frozenset(
    """py pyi ts tsx js jsx mjs cjs json md rst txt yaml yml toml ini cfg conf lock rs go
    java kt kts swift c h cc cpp hpp cs rb php sh bash zsh ps1 sql css scss html vue svelte
    xml gradle proto tf dockerfile env""".split()
)
_INSTALL = re.compile(
    r"\b(?:pip3?|uv(?: pip)?|poetry|npm|pnpm|yarn|bun|cargo|go|gem|composer)\s+"
    r"(?:install|add|i|get)[ \t]+((?:[^\s&|;]+[ \t]*)+)"
)
_NO_MODULE = re.compile(r"No module named '([\w.-]+)'|Cannot find module '([@\w./-]+)'")
# Names with digits that are not errors: algorithms, encodings, architectures, versions of a
# protocol or runtime (RS256 is a JWT signing algorithm, not an error code).
_NOT_ERROR = re.compile(
    r"^(?:sha|md|rs|hs|es|ps|aes|des|rsa|ecdsa|ed|crc|base|utf|ucs|x|arm|amd|int|uint|float|"
    r"http|ipv|py|python|node|ecma|tls|ssl|oauth|h|vp|av|mp|win|ubuntu|debian|iso|rfc)-?\d+$"
)
# Every-day words that the compressor's frequent-word concepts let through: no graph node
# should be called "after" or "next".
_GENERIC = frozenset(
    """after again against ago already always another anything around away back because
    before behind below between both bring call called came cannot change changed come
    could down during either enough even ever fine find found gets give given going gone
    good great half handle help however instead keep kept know known later least less
    let look looks made many maybe mean might much must near never new next nothing now
    often okay once onto over perhaps put quite rather really right said same saw say
    says see seem seen set several since soon still take taken tell thing things think
    though through thus together told too took toward under until upon very via want
    wanted way well went whether within without work works yes yet""".split()
)
_KIND_ORDER = {"file": 0, "error": 1, "command": 2, "package": 3, "symbol": 4, "concept": 5}


def _looks_like_file(name: str) -> bool:
    if "/" in name or "\\" in name:
        return True
    _, dot, ext = name.rpartition(".")
    return bool(dot) and ext in _EXTENSIONS


def _original(name: str, text: str) -> str:
    """`entities` lower-cases; the graph shows a name as the text wrote it."""
    m = re.search(re.escape(name), text, re.IGNORECASE)
    return m.group(0) if m else name


def _typed(name: str, text: str) -> Entity | None:
    if _looks_like_file(name):
        return ("file", name)
    if _ERROR_CODE.match(name) and name.upper() in text and not _NOT_ERROR.match(name):
        return ("error", name.upper())
    if re.fullmatch(r"[0-9a-f]{7,40}", name) or not re.search(r"[a-z]", name):
        return None  # a commit SHA or a version number: no graph kind for those
    shown = _original(name, text)
    if name.endswith(("error", "exception")) and shown[:1].isupper():
        return ("error", shown)  # ModuleNotFoundError, NullPointerException
    return ("symbol", shown)


def _packages(text: str) -> list[str]:
    out: list[str] = []
    for m in _INSTALL.finditer(text):
        for word in m.group(1).split():
            if word.startswith("-") or word == "." or (word[0] != "@" and _looks_like_file(word)):
                continue  # flags, `-r requirements.txt`, `pip install -e .`
            if word.startswith("@"):  # an npm scope: @scope/name@version
                name = "@" + word[1:].split("@", 1)[0]
            else:
                name = re.split(r"[<>=~!\[@]", word, maxsplit=1)[0]
            if re.fullmatch(r"@?[\w.-]+(?:/[\w.-]+)?", name) and len(name) >= 2:
                out.append(name.lower())
    for m in _NO_MODULE.finditer(text):
        out.append((m.group(1) or m.group(2)).split(".")[0].lower())
    return out


def _collect(files: list[str], concepts: list[str], text: str, extra: list[Entity]) -> list[Entity]:
    found: dict[tuple[str, str], Entity] = {}

    def add(kind: str, name: str) -> None:
        name = name.strip()
        if len(name) < 2:
            return
        key = (kind, name.lower())
        found.setdefault(key, (kind, name))

    for f in files:
        add("file", f)
    for kind, name in extra:
        add(kind, name)
    packages = _packages(text)
    for p in packages:
        add("package", p)
    for raw in entities(text):
        typed = _typed(raw, text)
        if typed is None or ("file", typed[1].lower()) in found:
            continue
        if typed[0] == "file" and "@" + typed[1] in packages:
            continue  # `@types/node` is a package, not the file `types/node`
        if ("package", typed[1].lower()) in found:
            continue
        add(*typed)
    for c in concepts:
        if c.lower() not in _GENERIC:
            add("concept", c.lower())
    ordered = sorted(found.values(), key=lambda e: _KIND_ORDER.get(e[0], 9))
    return ordered[:MAX_ENTITIES]


def observation_entities(obs: Observation) -> list[Entity]:
    extra: list[Entity] = []
    if obs.type == "command":
        head = command_head(command_of(obs))
        if head:
            extra.append(("command", head))
    err = error_key(obs)
    if err:
        extra.append(("error", err))
    text = f"{obs.title}\n{obs.narrative}"
    return _collect(obs.files, obs.concepts, text, extra)


def memory_entities(m: Memory) -> list[Entity]:
    extra: list[Entity] = [("command", s[4:]) for s in m.steps if s.startswith("run ")]
    return _collect(m.files, m.concepts, f"{m.title}\n{m.content}", extra)
