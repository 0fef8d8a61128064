"""Writes functions/kernel/secret_rules.json: gitleaks' rule set, mirrored, plus our own.

    python ops/secret_rules.py --gitleaks path/to/gitleaks.toml --commit SHA
    python ops/secret_rules.py            # re-merge ops/secret_rules_local.toml only
    python ops/secret_rules.py --check    # exit 1 if the JSON is not what this writes

The upstream file is gitleaks' `config/gitleaks.toml` (MIT licence, see LICENSE_TEXT);
fetch it by hand, nothing here downloads. Without --gitleaks the gitleaks rules already in
the JSON are kept as they are, so a change to our own rules needs no upstream copy.

What is kept of a gitleaks rule is what a text scrubber can use: id, regex, keywords,
entropy, secretGroup and the allowlists that do not depend on a file path (we scrub text,
not files: a rule's `path` restriction is dropped, the rule applies everywhere).

Each pattern is translated from Go RE2 to Python `re` (compiled with re.ASCII, as RE2's
classes are): a flag group in mid-pattern such as `p8e-(?i)[a-z0-9]{32}` becomes a scoped
group reaching to the end of the enclosing group, `\\z` becomes `\\Z`, an unescaped `$`
outside a class becomes `\\Z` (Go's `$` is end of text), `(?<name>` becomes `(?P<name>`.
The leading `[\\w.-]{0,50}?` of gitleaks' "name = value" rules is dropped: it only widens
where a match may start, never the secret it captures, and it costs Python's engine a
50-way retry at every position of the text.

`anchors` are derived per rule: lower-cased literal prefixes of which every match starts
with one (`ghp_`, `sk_live_`, `adafruit`, ...). The scrubber tries a rule only at places
where one of its anchors occurs; a rule without anchors is searched in full, and only when
one of its gitleaks keywords occurs (gitleaks' own prefilter).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "functions" / "kernel" / "secret_rules.json"
HOOKS_COPY = ROOT / "workers" / "hooks" / "secret_rules.json"
"""The hooks' copy: a plugin install copies only workers/hooks (workers/hooks/_scrub.py)."""
LOCAL = Path(__file__).with_name("secret_rules_local.toml")

UPSTREAM = "https://github.com/gitleaks/gitleaks"
LICENSE_TEXT = """MIT License

Copyright (c) 2019 Zachary Rice

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""

_LAZY_PREFIX = r"[\w.-]{0,50}?"
_FLAGS = re.compile(r"\(\?([imsU]*(?:-[imsU]+)?)\)")
_MAX_ANCHORS = 64


# ---- Go RE2 -> Python re -------------------------------------------------------------
def translate(go: str) -> str:
    """The Python `re` spelling of the RE2 pattern `go` (see the module doc)."""
    out: list[str] = []
    # one frame per open group: how many scoped flag groups we opened inside it
    frames: list[list[str]] = [[]]
    i, n = 0, len(go)
    in_class = False
    while i < n:
        c = go[i]
        if c == "\\":
            esc = go[i : i + 2]
            out.append(r"\Z" if esc == r"\z" else esc)
            i += 2
            continue
        if in_class:
            if c == "]" and not _class_opening(go, i):
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            continue
        m = _FLAGS.match(go, i)
        if m and i > 0:
            flags = m.group(1)
            out.append(f"(?{flags}:")
            frames[-1].append(flags)
            i = m.end()
            continue
        if go.startswith("(?<", i) and not go.startswith(("(?<=", "(?<!"), i):
            out.append("(?P<")
            frames.append([])
            i += 3
            continue
        if c == "(":
            frames.append([])
            out.append(c)
        elif c == ")":
            out.append(")" * len(frames.pop()))
            out.append(c)
        elif c == "|" and frames[-1]:
            # RE2 keeps a mid-group flag for the rest of the group, alternatives included
            out.append(")" * len(frames[-1]) + "|" + "".join(f"(?{f}:" for f in frames[-1]))
        elif c == "$":
            out.append(r"\Z")
        else:
            out.append(c)
        i += 1
    out.append(")" * len(frames.pop()))
    return "".join(out)


def _class_opening(pattern: str, i: int) -> bool:
    """Whether the `]` at `i` is a literal right after `[` or `[^` (RE2 and Python agree)."""
    j = i - 1
    if j >= 0 and pattern[j] == "^":
        j -= 1
    return j >= 0 and pattern[j] == "[" and (j == 0 or pattern[j - 1] != "\\")


def strip_lazy_prefix(pattern: str) -> str:
    """`pattern` without gitleaks' leading `[\\w.-]{0,50}?` (also inside a leading `(?i:`)."""
    head = ""
    rest = pattern
    while True:
        for opener in ("(?i)", "(?i:"):
            if rest.startswith(opener):
                head, rest = head + opener, rest[len(opener) :]
                break
        else:
            if rest.startswith(_LAZY_PREFIX):
                rest = rest[len(_LAZY_PREFIX) :]
                continue
            return head + rest


# ---- anchors -------------------------------------------------------------------------
def anchors(pattern: str) -> list[str]:
    """Lower-cased literal prefixes of which every match of `pattern` starts with one;
    [] when they cannot be told (a class, an optional part or a number at the start)."""
    from re import _parser  # type: ignore[attr-defined]  # generation time only

    tree = _parser.parse(pattern, re.ASCII)
    found, _complete = _lead(list(tree))
    if not found or any(len(a) < 2 for a in found) or len(found) > _MAX_ANCHORS:
        return []
    # a prefix that another prefix starts with adds nothing: the shorter one occurs too
    return sorted(a for a in found if not any(a != b and a.startswith(b) for b in found))


def _lead(items: list[Any]) -> tuple[set[str], bool]:
    """The literal prefixes of the sequence `items`, and whether it is all literal."""
    from re import _constants as C  # type: ignore[attr-defined]

    prefixes = {""}
    for op, av in items:
        if op is C.AT:
            continue
        if op is C.LITERAL:
            alts = {chr(av).lower()}
            complete = True
        elif op is C.IN:
            if not av or any(o is not C.LITERAL for o, _v in av):
                return prefixes, False
            alts, complete = {chr(v).lower() for _o, v in av}, True
        elif op is C.SUBPATTERN:
            alts, complete = _lead(list(av[-1]))
        elif op is C.BRANCH:
            alts, complete = set(), True
            for branch in av[1]:
                a, c = _lead(list(branch))
                alts |= a
                complete = complete and c
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT) and av[0] >= 1:
            alts, complete = _lead(list(av[2]))
            complete = complete and av[0] == av[1] == 1
        else:
            return prefixes, False
        if len(prefixes) * len(alts) > _MAX_ANCHORS:
            return prefixes, False
        prefixes = {p + a for p in prefixes for a in alts}
        if not complete:
            return prefixes, False
    return prefixes, True


# ---- rules ---------------------------------------------------------------------------
def _python(go: str) -> str:
    py = translate(go)
    re.compile(py, re.ASCII)  # fails loudly here, not in the server
    return py


def _allowlists(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for a in raw:
        if a.get("paths") and a.get("condition", "OR").upper() == "AND":
            continue  # needs a file path to hold: never applies to text
        kept: dict[str, Any] = {}
        target = a.get("regexTarget", "secret")
        if a.get("regexes"):
            if target != "secret":
                kept["regexTarget"] = target
            kept["regexes"] = [_python(r) for r in a["regexes"]]
        if a.get("stopwords"):
            kept["stopwords"] = [s.lower() for s in a["stopwords"]]
        if kept:
            out.append(kept)
    return out


def convert(rule: dict[str, Any], source: str) -> dict[str, Any] | None:
    """Our JSON form of one rule in gitleaks' TOML schema; None for a path-only rule."""
    if not rule.get("regex"):
        return None
    regex = _python(strip_lazy_prefix(rule["regex"]))
    out: dict[str, Any] = {"id": rule["id"], "source": source, "regex": regex}
    out["keywords"] = sorted({k.lower() for k in rule.get("keywords", [])})
    out["anchors"] = anchors(regex)
    if rule.get("entropy"):
        out["entropy"] = rule["entropy"]
    if rule.get("secretGroup"):
        out["secretGroup"] = rule["secretGroup"]
    allow = _allowlists(rule.get("allowlists", []))
    if allow:
        out["allowlists"] = allow
    return out


def build(gitleaks: dict[str, Any] | None, commit: str, previous: dict[str, Any]) -> dict[str, Any]:
    local = tomllib.loads(LOCAL.read_text())
    if gitleaks is not None:
        upstream = [r for r in (convert(x, "gitleaks") for x in gitleaks["rules"]) if r]
        g = gitleaks.get("allowlist", {})
        allow = {
            "regexes": [_python(r) for r in g.get("regexes", [])],
            "stopwords": [s.lower() for s in g.get("stopwords", [])],
        }
    else:
        upstream = [r for r in previous["rules"] if r["source"] == "gitleaks"]
        allow = previous["allowlist"]
        commit = previous["gitleaks"]["commit"]
    ours = [r for r in (convert(x, "local") for x in local["rules"]) if r]
    ids = [r["id"] for r in upstream + ours]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise SystemExit(f"rule ids defined twice: {sorted(dup)}")
    return {
        "about": "Secret-detection rules for functions/kernel/scrub.py and the hooks' "
        "_scrub.py. Written by ops/secret_rules.py: edit ops/secret_rules_local.toml "
        "or rerun that script on a newer gitleaks.toml, never this file.",
        "gitleaks": {
            "repository": UPSTREAM,
            "path": "config/gitleaks.toml",
            "commit": commit,
            "license": LICENSE_TEXT.splitlines(),
        },
        "allowlist": allow,
        "rules": upstream + ours,
    }


def dumps(data: dict[str, Any]) -> str:
    """One rule per line, so an update reads as a diff of the rules that changed."""
    head = {k: v for k, v in data.items() if k != "rules"}
    lines = ["{"]
    for k, v in head.items():
        lines.append(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)},")
    lines.append('"rules": [')
    rules = [json.dumps(r, ensure_ascii=False) for r in data["rules"]]
    lines.append(",\n".join(rules))
    lines.append("]}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--gitleaks", type=Path, help="gitleaks' config/gitleaks.toml")
    ap.add_argument("--commit", default="", help="the gitleaks commit that file is from")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    args = ap.parse_args(argv)
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    gitleaks = tomllib.loads(args.gitleaks.read_text()) if args.gitleaks else None
    if gitleaks is not None and not args.commit:
        ap.error("--commit: name the gitleaks commit the file comes from")
    if gitleaks is None and not previous:
        ap.error("--gitleaks: there is no previous JSON to take gitleaks' rules from")
    text = dumps(build(gitleaks, args.commit, previous))
    outs = [args.out, HOOKS_COPY] if args.out == OUT else [args.out]
    if args.check:
        stale = [o for o in outs if not o.exists() or o.read_text() != text]
        for o in stale:
            print(f"{o} differs: run python ops/secret_rules.py")
        if not stale:
            print("up to date")
        return 1 if stale else 0
    for o in outs:
        o.write_text(text)
    n = text.count('"id": ')
    print(f"wrote {args.out.relative_to(ROOT)}: {n} rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
