"""Tokenization: code stays whole and splits into parts, prose is stemmed, CJK degrades."""

from __future__ import annotations

import pytest

from functions.search import analysis
from functions.search.analysis import entities, synonyms, tokenize

pytestmark = pytest.mark.unit


def test_identifiers_are_kept_whole_and_split_on_case_and_underscore() -> None:
    toks = tokenize("fixed parseConfigFile and get_user_by_id")
    assert {"parseconfigfile", "pars", "config", "file"} <= set(toks)
    assert {"get_user_by_id", "user", "id"} <= set(toks)


def test_paths_are_kept_whole_with_their_components() -> None:
    toks = tokenize("edited src/auth/login_handler.py today")
    assert "src/auth/login_handler.py" in toks
    assert {"src", "auth", "login", "handler", "py"} <= set(toks)


def test_error_codes_and_commit_shas_are_not_stemmed_or_split() -> None:
    toks = tokenize("error[E0425] then ENOENT and TS2345 in commit 3f2a9c1e")
    assert {"e0425", "enoent", "ts2345", "3f2a9c1e"} <= set(toks)
    assert "3f2a9c1e" in entities("commit 3f2a9c1e")


def test_prose_is_stemmed_and_stopwords_dropped() -> None:
    assert tokenize("The databases were running") == ["databas", "run"]


def test_synonyms_link_abbreviations_to_words() -> None:
    assert "databas" in synonyms("db")
    assert "db" in synonyms("databas")


def test_cjk_uses_bigrams_when_jieba_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(analysis, "_jieba_cut", lambda: None)
    assert tokenize("修复错误") == ["修复", "复错", "错误"]


def test_cjk_is_segmented_with_jieba_when_installed() -> None:
    pytest.importorskip("jieba")
    toks = tokenize("我们修复了数据库错误")
    assert "数据库" in toks and "错误" in toks


def test_redaction_markers_are_not_entities() -> None:
    from functions.search.analysis import entities

    found = entities("KeyError in src/auth/login.py token=[REDACTED:secret_assignment]")
    assert found == ["keyerror", "src/auth/login.py"]
