"""Operations on the service machine's files: compress a markdown file (backup kept,
structure preserved), refuse secret-looking paths, export an Obsidian vault inside the
allowed roots only, import Claude Code transcripts, and upstream's path confinement
(0.9.30, src/functions/path-guard.ts @0219906): files are read and written only under the
data dir, ~/.agentmemory or AGENTMEMORY_IMPORT_ROOT."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from functions.files.markdown import compress_markdown, problems
from tests.fixtures import rest_client

DOC = """# Deploying


It is important to note that you   should basically run `make  deploy` in order to ship.
  - nested   item, see https://example.com/runbook  now

```sh
make   deploy    # spacing kept
```
## Rollback
Just   revert the tag.
"""


@pytest.mark.unit
def test_compression_keeps_headings_urls_code_and_nesting() -> None:
    out = compress_markdown(DOC)
    assert problems(DOC, out) == []
    assert "make   deploy    # spacing kept" in out and "`make  deploy`" in out
    assert "  - nested item, see https://example.com/runbook now" in out
    assert "You should run `make  deploy` to ship." in out
    assert "Revert the tag." in out and len(out) < len(DOC)


def allowed(tmp_path: Path) -> Path:
    """A folder under ~/.agentmemory of the worker's HOME (tests/memory/conftest.py)."""
    folder = tmp_path / "home" / ".agentmemory" / "notes"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def test_compress_file_writes_a_backup_and_refuses_what_it_must(
    rest: httpx.AsyncClient, tmp_path: Path
) -> None:
    doc = allowed(tmp_path) / "NOTES.md"
    doc.write_text(DOC)
    r = await rest.post("/agentmemory/compress-file", json={"filePath": str(doc)})
    assert r.status_code == 200, r.text
    body = r.json()
    assert Path(body["backupPath"]).read_text() == DOC
    assert doc.read_text() == compress_markdown(DOC)
    assert body["compressedChars"] < body["originalChars"]
    (allowed(tmp_path) / "notes.txt").write_text("x")
    bad = await rest.post(
        "/agentmemory/compress-file", json={"filePath": str(allowed(tmp_path) / "notes.txt")}
    )
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "filePath"
    secret = allowed(tmp_path) / "secrets.md"
    secret.write_text("# x\n")
    refused = await rest.post("/agentmemory/compress-file", json={"filePath": str(secret)})
    assert refused.status_code == 403


async def test_obsidian_export_writes_a_vault_inside_the_export_root_only(
    rest: httpx.AsyncClient, tmp_path: Path
) -> None:
    await rest.post(
        "/agentmemory/remember",
        json={"content": "Refunds need two approvals", "concepts": ["refunds"], "project": "ops"},
    )
    r = await rest.post("/agentmemory/obsidian/export", json={"types": "memories"})
    assert r.status_code == 200, r.text
    vault = Path(r.json()["vaultDir"])
    assert vault == tmp_path / "home" / ".agentmemory" / "vault"
    notes = list((vault / "memories").glob("*.md"))
    assert len(notes) == 1 and "[[refunds]]" in notes[0].read_text()
    assert "## Memories (1)" in (vault / "MOC.md").read_text()
    outside = await rest.post("/agentmemory/obsidian/export", json={"vaultDir": str(tmp_path)})
    assert outside.status_code == 200 and outside.json()["success"] is False
    assert f"path {tmp_path} is outside the allowed roots" in outside.json()["error"]


async def test_replay_import_jsonl_reads_transcripts_once(
    rest: httpx.AsyncClient, tmp_path: Path
) -> None:
    session = allowed(tmp_path) / "s-1.jsonl"
    records = [
        {"type": "user", "uuid": "u1", "sessionId": "s-1", "cwd": str(tmp_path),
         "timestamp": "2026-11-01T10:00:00Z",
         "message": {"content": [{"type": "text", "text": "add a healthcheck endpoint"}]}},
        {"type": "assistant", "uuid": "a1", "sessionId": "s-1", "timestamp": "2026-11-01T10:00:01Z",
         "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                  "input": {"command": "pytest -k health"}}]}},
        {"type": "user", "uuid": "u2", "sessionId": "s-1", "timestamp": "2026-11-01T10:00:02Z",
         "message": {"content": [{"type": "tool_result", "tool_use_id": "t1",
                                  "content": "1 passed"}]}},
    ]  # fmt: skip
    session.write_text("\n".join(json.dumps(r) for r in records))
    first = await rest.post("/agentmemory/replay/import-jsonl", json={"path": str(session)})
    assert first.status_code == 202 and first.json()["stored"] == 2, first.text
    again = await rest.post(
        "/agentmemory/replay/import-jsonl", json={"path": str(allowed(tmp_path))}
    )
    assert again.json()["duplicates"] == 2 and again.json()["stored"] == 0
    replay = (await rest.get("/agentmemory/replay/load", params={"sessionId": "s-1"})).json()
    events = replay["timeline"]["events"]  # upstream's timeline: a prompt, a call, its result
    assert [e["kind"] for e in events] == ["prompt", "tool_call", "tool_result"]
    assert [e["offsetMs"] for e in events[:2]] == [0, 2000] and events[2]["offsetMs"] > 2000
    nowhere = str(allowed(tmp_path) / "nope" / "x")
    missing = await rest.post("/agentmemory/replay/import-jsonl", json={"path": nowhere})
    assert missing.status_code == 404 and missing.json()["error"]["field"] == "path"
    secret = await rest.post("/agentmemory/replay/import-jsonl", json={"path": "/x/.ssh/a.jsonl"})
    assert secret.status_code == 403 and secret.json()["error"]["field"] == "path"


async def test_obsidian_export_writes_crystals_too(rest: httpx.AsyncClient) -> None:
    a = (await rest.post("/agentmemory/actions", json={"title": "batch the inserts"})).json()
    aid = a["action"]["id"]
    await rest.post("/agentmemory/actions/update", json={"actionId": aid, "status": "done"})
    made = await rest.post("/agentmemory/crystals/create", json={"actionIds": aid})
    assert made.status_code == 201, made.text
    crystal = made.json()["crystal"]
    r = await rest.post("/agentmemory/obsidian/export", json={})
    assert r.status_code == 200, r.text
    assert r.json()["exported"]["crystals"] == 1
    vault = Path(r.json()["vaultDir"])
    note = (vault / "crystals" / f"{crystal['id']}.md").read_text()
    assert 'type: "crystal"' in note and "# Crystal: " in note
    assert f"[[{aid}]]" in note and "## Key Outcomes" in note
    assert "## Crystals (1)" in (vault / "MOC.md").read_text()


async def test_paths_outside_the_allowed_roots_are_refused_naming_the_path(
    memory_worker: Any, http_trigger: Any, tmp_path: Path
) -> None:
    extra = tmp_path / "imports"
    extra.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "README.md").write_text(DOC)
    (outside / "t.jsonl").write_text("{}\n")
    escape = allowed(tmp_path) / "link"
    escape.symlink_to(outside, target_is_directory=True)
    memory_worker(AGENTMEMORY_IMPORT_ROOT=f"{extra}:relative/ignored")
    rest = await rest_client(http_trigger())
    try:
        calls = [
            ("compress-file", {"filePath": str(outside / "README.md")}, 200),
            ("compress-file", {"filePath": str(escape / "README.md")}, 200),  # via a symlink
            ("compress-file", {"filePath": f"{allowed(tmp_path)}/../../../elsewhere/README.md"}, 200),
            ("replay/import-jsonl", {"path": str(outside / "t.jsonl")}, 202),
            ("obsidian/export", {"vaultDir": str(outside / "vault")}, 200),
        ]  # fmt: skip
        for route, body, status in calls:
            r = await rest.post(f"/agentmemory/{route}", json=body)
            assert r.status_code == status, (route, r.text)
            doc = r.json()
            assert doc["success"] is False, (route, doc)
            assert "is outside the allowed roots" in doc["error"], doc
            assert str(outside) in doc["error"] and "AGENTMEMORY_IMPORT_ROOT" in doc["error"]
            assert str(extra) in doc["error"]  # the roots are listed, the variable's too
        assert (outside / "README.md").read_text() == DOC  # nothing was written
        assert not (outside / "vault").exists()
        kept = allowed(tmp_path) / "KEPT.md"
        kept.write_text(DOC)
        ok = await rest.post("/agentmemory/compress-file", json={"filePath": str(kept)})
        assert ok.json()["success"] is True, ok.text
        under_extra = extra / "EXTRA.md"
        under_extra.write_text(DOC)
        ok = await rest.post("/agentmemory/compress-file", json={"filePath": str(under_extra)})
        assert ok.json()["success"] is True, ok.text  # AGENTMEMORY_IMPORT_ROOT widens the roots
    finally:
        await rest.aclose()
