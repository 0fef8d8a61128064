"""The mirrored rule set: every rule compiles, finds what its own pattern matches (its
anchors hold for every match), and the JSON is exactly what ops/secret_rules.py writes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from functions.kernel.scrub import RULE_SET, _lower, scrub
from functions.kernel.secret_rules import Rule, shannon
from ops.secret_rules import anchors, convert, main, strip_lazy_prefix, translate

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("rule", RULE_SET.rules, ids=lambda r: r.id)
@settings(
    max_examples=12,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_every_rule_is_found_wherever_its_pattern_matches(rule: Rule, data: st.DataObject) -> None:
    example = data.draw(st.from_regex(rule.pattern, fullmatch=True))
    m = rule.pattern.match(example)
    assert m is not None
    if rule.anchors:  # the scrubber tries the rule only where an anchor starts
        assert _lower(example).startswith(tuple(rule.anchors))
    span = rule.secret_span(m)
    secret = example[span[0] : span[1]]
    if len(secret) < 8 or not rule.accepts(example, m, span, RULE_SET.allowlist):
        return  # gitleaks would not report it either (entropy, allowlists)
    # without anchors a rule runs only where one of its keywords occurs, as in gitleaks
    keyword = "" if rule.anchors else f"\n{rule.keywords[0]}"
    # The example may hold the secret's characters elsewhere too (a generated key name
    # like "pwdHuqe... := Huqe..."): the one at the span is the one that must go.
    elsewhere = (example[: span[0]] + "\0" + example[span[1] :]).count(secret)
    assert scrub(f"{example}\n{keyword}").count(secret) <= elsewhere


def test_the_rule_set_mirrors_gitleaks_and_names_its_source() -> None:
    ids = [r.id for r in RULE_SET.rules]
    assert len(ids) == len(set(ids)) >= 200
    assert len(RULE_SET.gitleaks_commit) == 40
    assert {"stripe-access-token", "generic-api-key", "dockerhub-access-token"} <= set(ids)


def test_the_json_is_what_the_generator_writes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check"]) == 0, capsys.readouterr().out


@pytest.mark.parametrize(
    ("go", "python"),
    [
        (r"\b(p8e-(?i)[a-z0-9]{32})", r"\b(p8e-(?i:[a-z0-9]{32}))"),
        (r"dp\.pt\.(?i)[a-z0-9]{43}", r"dp\.pt\.(?i:[a-z0-9]{43})"),
        # RE2 keeps a mid-group flag across the rest of the group, alternatives included
        (r"""(?:"(?i)a"|'b')""", r"""(?:"(?i:a")|(?i:'b'))"""),
        (r"(?i)\bx(?-i:Y)z$", r"(?i)\bx(?-i:Y)z\Z"),
        (r"a(?:\s|\z)[$]\$", r"a(?:\s|\Z)[$]\$"),
        (r"(?<alg>ab)|[^]a]$", r"(?P<alg>ab)|[^]a]\Z"),
        (r"(?<=x)y(?<!z)", r"(?<=x)y(?<!z)"),
    ],
)
def test_go_patterns_are_translated_to_python(go: str, python: str) -> None:
    assert translate(go) == python


def test_the_lazy_name_prefix_is_dropped_at_the_start_only() -> None:
    lazy = r"[\w.-]{0,50}?"
    assert strip_lazy_prefix(rf"(?i){lazy}(?:lob)x") == "(?i)(?:lob)x"
    assert strip_lazy_prefix(rf"{lazy}(?i:{lazy}(?:okta))y") == "(?i:(?:okta))y"
    assert strip_lazy_prefix(rf"a{lazy}b") == rf"a{lazy}b"


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"\b((?:sk|rk)_(?:test|live)_[a-z]+)", ["rk_live_", "rk_test_", "sk_live_", "sk_test_"]),
        (r"(?i)(?:adafruit|Foo)(?:[ \t\w.-]{0,20})=", ["adafruit", "foo"]),
        (r"(?-i:[Aa]pi|API)_x", ["api_x"]),
        (r"(?:passw(?:or)?d|key)=", ["key", "passw"]),
        (r"ghp_[0-9a-zA-Z]{36}", ["ghp_"]),
        (r"[a-z0-9]{14}\.atlasv1", []),  # a class first: no literal prefix
        (r"(?:https?://)?hooks\.slack\.com", []),  # an optional part first
        (r"s\.x|hvs\.y", ["hvs.y", "s.x"]),
        (r"a[bc]d", ["abd", "acd"]),
        (r"x\d", []),  # one character is no anchor
    ],
)
def test_anchors_are_the_literal_prefixes_every_match_starts_with(
    pattern: str, expected: list[str]
) -> None:
    assert anchors(pattern) == expected


def test_a_rule_keeps_only_the_allowlists_that_apply_to_text() -> None:
    rule = {
        "id": "x",
        "regex": r"(?i)[\w.-]{0,50}?(?:foo)=(\w{8})$",
        "keywords": ["FOO"],
        "entropy": 3,
        "allowlists": [
            {"paths": [r"\.md$"]},
            {"condition": "AND", "paths": [r"\.bb$"], "regexes": ["x"]},
            {"regexTarget": "match", "regexes": [r"(?i)foo=test"], "stopwords": ["Sample"]},
        ],
    }
    assert convert(rule, "gitleaks") == {
        "id": "x",
        "source": "gitleaks",
        "regex": r"(?i)(?:foo)=(\w{8})\Z",
        "keywords": ["foo"],
        "anchors": ["foo="],
        "entropy": 3,
        "allowlists": [
            {"regexTarget": "match", "regexes": [r"(?i)foo=test"], "stopwords": ["sample"]}
        ],
    }
    assert convert({"id": "pkcs12-file", "path": r"\.p12$"}, "gitleaks") is None


def test_gitleaks_filters_a_candidate_by_entropy_and_allowlists() -> None:
    rules = {r.id: r for r in RULE_SET.rules}
    assert shannon("aaaa") == 0 and round(shannon("abcd"), 3) == 2
    key = "AKIA" + "QYLPMN5HHHFPZAM2"
    assert "[REDACTED" in scrub(f"id {key}")
    aws = rules["aws-access-token"]
    example = "AKIA" + "IOSFODNN7EXAMPLE"  # the documentation's own example, allowlisted
    m = aws.pattern.match(example)
    assert m is not None and not aws.accepts(example, m, aws.secret_span(m), RULE_SET.allowlist)
    generic = rules["generic-api-key"]
    for text in ("api_version = 2023-10-16abc", "secret_name = my-db-secret-name"):
        m = generic.pattern.search(text)
        assert m is None or not generic.accepts(
            text, m, generic.secret_span(m), RULE_SET.allowlist
        ), text
