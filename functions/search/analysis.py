"""Text analysis shared by indexing and querying: one token stream for BM25 and the graph.

Prose is lower-cased, stop-worded and Snowball-stemmed. Code keeps its shape: a path or an
identifier is indexed whole *and* as its parts (split on `/`, `.`, `_`, `-` and case
changes), so `parseConfigFile` is found by `parse config`; error codes (`E0425`,
`ENOENT`, `TS2345`) and commit SHAs are kept whole, never stemmed or split. Chinese,
Japanese and Korean runs are segmented with jieba when it is installed, otherwise by
overlapping character bigrams, which index well without a dictionary.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterable

import Stemmer

from functions.kernel.scrub import without_markers

_stemmer = Stemmer.Stemmer("english")
_stem_cache: dict[str, str] = {}

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves s t d ll m re ve y o don doesn didn isn wasn
    weren aren hasn haven hadn won wouldn shouldn couldn also get got let us hey oh yeah""".split()
)

# Query-side expansions: abbreviations a coding agent (or its user) writes interchangeably.
# Both directions are listed so a query for either form reaches documents with the other.
_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("db", "database"),
    ("auth", "authentication", "login"),
    ("config", "configuration", "settings"),
    ("err", "error", "exception", "failure"),
    ("js", "javascript"),
    ("ts", "typescript"),
    ("py", "python"),
    ("k8s", "kubernetes"),
    ("repo", "repository"),
    ("dir", "directory", "folder"),
    ("env", "environment"),
    ("deps", "dependencies", "dependency"),
    ("pkg", "package"),
    ("msg", "message"),
    ("fn", "func", "function"),
    ("param", "parameter", "argument", "arg"),
    ("perf", "performance", "latency"),
    ("docs", "documentation"),
    ("test", "spec"),
    ("bug", "defect", "issue"),
    ("delete", "remove"),
    ("crash", "panic"),
    ("ci", "pipeline"),
)

_WORD = re.compile(r"[\w][\w./\\:#@+-]*[\w]|[\w]", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_SHA = re.compile(r"^[0-9a-f]{7,40}$")
_ERROR_CODE = re.compile(r"^(?:[A-Z]{1,6}-?\d{2,6}|E[A-Z]{3,}|[A-Z]+_[A-Z_]*ERR[A-Z_]*)$")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_]+", re.UNICODE)
_SEPARATORS = re.compile(r"[./\\:#@+_-]+")


def stem(word: str) -> str:
    s = _stem_cache.get(word)
    if s is None:
        s = _stemmer.stemWord(word)
        if len(_stem_cache) < 500_000:
            _stem_cache[word] = s
    return s


def _prose(word: str, out: list[str]) -> None:
    if len(word) < 2 and not word.isdigit():
        return
    if word in STOPWORDS:
        return
    out.append(stem(word))


def _is_sha(raw: str) -> bool:
    return bool(_SHA.match(raw)) and any(c.isdigit() for c in raw) and any(c.isalpha() for c in raw)


def _code_token(raw: str, out: list[str]) -> None:
    """A token with internal structure: keep it whole, then add its parts as prose."""
    whole = raw.lower().strip("./\\:#@+-")
    out.append(whole)
    for piece in _SEPARATORS.split(raw):
        if not piece:
            continue
        parts = _PARTS.findall(piece)
        if len(parts) > 1 and piece.lower() != whole:
            out.append(piece.lower())
        for p in parts:
            _prose(p.lower(), out)


@functools.cache
def _jieba_cut() -> Callable[[str], Iterable[str]] | None:
    try:
        import jieba
    except ImportError:
        return None
    jieba.setLogLevel(60)
    cut: Callable[[str], Iterable[str]] = jieba.cut_for_search
    return cut


def _cjk(run: str, out: list[str], use_jieba: bool) -> None:
    cut = _jieba_cut() if use_jieba else None
    if cut is not None:
        out.extend(w for w in cut(run) if w.strip())
        return
    if len(run) == 1:
        out.append(run)
        return
    out.extend(run[i : i + 2] for i in range(len(run) - 1))


def tokenize(text: str, *, use_jieba: bool = True) -> list[str]:
    """Analysed tokens of `text`, in order (duplicates kept: term frequency matters)."""
    if not text:
        return []
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
        has_cjk = _CJK.search(text) is not None
    else:
        has_cjk = False
    out: list[str] = []
    cache = _analysed
    for raw in _WORD.findall(text):
        hit = cache.get(raw)
        if hit is not None:
            out.extend(hit)
            continue
        if has_cjk and _CJK.search(raw):
            _mixed(raw, out, use_jieba)
            continue
        # Tool outputs repeat the same tokens over and over: analyse each distinct raw
        # token once (bounded cache), the dominant cost of indexing otherwise.
        toks = _analyse(raw)
        if len(cache) < _ANALYSED_MAX:
            cache[raw] = toks
        out.extend(toks)
    return out


_ANALYSED_MAX = 400_000
_analysed: dict[str, tuple[str, ...]] = {}


def _analyse(raw: str) -> tuple[str, ...]:
    out: list[str] = []
    if raw.isalpha() and raw.islower() and raw.isascii():
        # the common case, plain lower-case prose, skips every code check
        if len(raw) > 1 and raw not in STOPWORDS:
            out.append(stem(raw))
        return tuple(out)
    raw = raw.rstrip(".:-")
    if not raw:
        return ()
    if raw[0].isupper() and _ERROR_CODE.match(raw):
        out.append(raw.lower())
    elif 7 <= len(raw) <= 40 and _is_sha(raw):
        out.append(raw)
    elif _SEPARATORS.search(raw) or (raw[1:] != raw[1:].lower() and raw != raw.upper()):
        _code_token(raw, out)
    else:
        _prose(raw.lower(), out)
    return tuple(out)


def _mixed(raw: str, out: list[str], use_jieba: bool) -> None:
    pos = 0
    for c in _CJK.finditer(raw):
        if c.start() > pos:
            out.extend(tokenize(raw[pos : c.start()], use_jieba=use_jieba))
        _cjk(c.group(), out, use_jieba)
        pos = c.end()
    if pos < len(raw):
        out.extend(tokenize(raw[pos:], use_jieba=use_jieba))


@functools.cache
def _synonym_map() -> dict[str, tuple[str, ...]]:
    out: dict[str, set[str]] = {}
    for group in _SYNONYM_GROUPS:
        stems = [stem(w) for w in group]
        for s in stems:
            out.setdefault(s, set()).update(x for x in stems if x != s)
    return {k: tuple(sorted(v)) for k, v in out.items()}


def synonyms(token: str) -> tuple[str, ...]:
    """Other analysed tokens that mean the same as `token` (empty when none are known)."""
    return _synonym_map().get(token, ())


def entities(text: str) -> list[str]:
    """Code-like entities a text names: paths, files, identifiers, error codes, SHAs."""
    found: list[str] = []
    for w in _WORD.findall(without_markers(text)):
        if w.isalpha() and w.islower():
            continue
        raw = w.rstrip(".:-")
        if len(raw) < 3:
            continue
        if _ERROR_CODE.match(raw):
            found.append(raw.lower())
        elif _is_sha(raw):
            found.append(raw)
        elif "/" in raw or ("." in raw and not raw.endswith(".")) or "_" in raw:
            found.append(raw.lower())
        elif raw[1:] != raw[1:].lower() and raw != raw.upper():
            found.append(raw.lower())
    return found
