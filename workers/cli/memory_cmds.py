"""Commands over the stored memory: demo, search, remember, export, import, import-jsonl,
project merge."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import Progress
from rich.table import Table

from workers.cli.app import DataDir, InstanceOpt, Port, UrlOpt, app, err, fail, out, target_of
from workers.cli.settings import cli_settings
from workers.cli.target import ServiceError


@app.command()
def demo(
    ctx: typer.Context,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
    url: UrlOpt = None,
) -> None:
    """Seed three coding sessions (JWT auth, an N+1 fix, rate limiting) and search them."""
    from workers.cli import demo as demo_mod

    target = target_of(ctx, data_dir, port, instance, url)
    try:
        with target.client() as rest:
            n = demo_mod.seed(rest)
            out.print(
                f"seeded {len(demo_mod.SESSIONS)} sessions, {n} events (project {demo_mod.PROJECT})"
            )
            for q in demo_mod.QUERIES:
                data = rest.call(
                    "POST",
                    "/agentmemory/search",
                    {"query": q, "limit": 3, "project": demo_mod.PROJECT},
                )
                _print_hits(q, data)
    except ServiceError as exc:
        raise fail(str(exc)) from None


def _hits(data: Any) -> list[dict[str, Any]]:
    items = data.get("results", data.get("items", [])) if isinstance(data, dict) else data
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _print_hits(query: str, data: Any) -> None:
    """Best first, with what each score means; an empty result says so (and why it may be)."""
    hits = sorted(_hits(data), key=lambda h: -_score(h))
    if not hits:
        reason = data.get("message") if isinstance(data, dict) else None
        out.print(f"search: {query}\n  {reason or f'nothing in memory matches {query!r}'}")
        out.print("  (try fewer or other words, or check the project with --project)")
        return
    table = Table(
        "relevance",
        "kind",
        "when",
        "session",
        "title",
        "matched by",
        title=f"search: {query}",
        title_justify="left",
        caption="relevance: 1.00 = ranked first by every retriever that answered",
        caption_justify="left",
    )
    for hit in hits:
        rec = hit.get("record") or hit.get("observation") or hit.get("memory") or hit
        table.add_row(
            f"{_score(hit):.2f}",
            str(hit.get("kind") or ""),
            str(rec.get("timestamp") or rec.get("createdAt") or hit.get("timestamp") or "")[:10],
            str(rec.get("sessionId") or hit.get("session_id") or hit.get("sessionId") or ""),
            str(rec.get("title") or rec.get("content") or rec.get("narrative") or "")[:80],
            ", ".join(hit.get("matched") or []),
        )
    out.print(table)


def _score(hit: dict[str, Any]) -> float:
    score = hit.get("score")
    return float(score) if isinstance(score, int | float) else 0.0


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    limit: Annotated[int, typer.Option(min=1, max=100)] = 10,
    project: Annotated[str | None, typer.Option(help="Only this project.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
    url: UrlOpt = None,
) -> None:
    """Search observations and memories."""
    body: dict[str, Any] = {"query": query, "limit": limit}
    if project:
        body["project"] = project
    try:
        with target_of(ctx, data_dir, port, instance, url).client() as rest:
            data = rest.call("POST", "/agentmemory/search", body)
    except ServiceError as exc:
        raise fail(str(exc)) from None
    if as_json:
        sys.stdout.write(json.dumps(data) + "\n")
    else:
        _print_hits(query, data)


@app.command()
def remember(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="What to remember.")],
    type: Annotated[
        str, typer.Option(help="fact, decision, pattern, preference, bug, workflow")
    ] = "fact",
    concept: Annotated[list[str] | None, typer.Option("--concept", help="Repeatable.")] = None,
    file: Annotated[list[str] | None, typer.Option("--file", help="Repeatable.")] = None,
    project: Annotated[
        str | None,
        typer.Option(help="Default: this directory's project, named as the hooks name it."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the server's reply.")] = False,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
    url: UrlOpt = None,
) -> None:
    """Save a memory on purpose (in the project of the current directory)."""
    from workers.hooks._hookcore import Settings, project_of

    body: dict[str, Any] = {
        "content": content,
        "type": type,
        "concepts": concept or [],
        "files": file or [],
        # The hooks file a session under its git root's folder name (else the cwd's):
        # a memory saved here sits in the same project as what they captured.
        "project": project if project is not None else project_of(Settings(), os.getcwd()),
    }
    try:
        with target_of(ctx, data_dir, port, instance, url).client() as rest:
            data = rest.call("POST", "/agentmemory/remember", body)
    except ServiceError as exc:
        raise fail(str(exc)) from None
    if as_json:
        sys.stdout.write(json.dumps(data) + "\n")
        return
    out.print(_saved_line(data, body["project"]), markup=False, highlight=False)


def _saved_line(data: Any, project: str) -> str:
    memory = data.get("memory") if isinstance(data, dict) else None
    if not isinstance(memory, dict):
        return f"saved: {json.dumps(data)}"
    line = f"saved memory {memory.get('id')} ({memory.get('type')}, project {project or '-'})"
    if data.get("supersededId"):
        line += f"; replaces {data['supersededId']}"
    similar = data.get("similarTo")
    if isinstance(similar, list) and similar:
        ids = ", ".join(str(s.get("id")) for s in similar if isinstance(s, dict))
        line += f"; similar to {ids}"
    return line


@app.command()
def export(
    ctx: typer.Context,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File (default stdout).")
    ] = None,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
    url: UrlOpt = None,
) -> None:
    """Export everything as JSON."""
    try:
        with target_of(ctx, data_dir, port, instance, url).client(timeout=120) as rest:
            data = rest.call("GET", "/agentmemory/export")
    except ServiceError as exc:
        raise fail(str(exc)) from None
    text = json.dumps(data, indent=1)
    if output:
        output.write_text(text)
        err.print(f"exported to {output}")
    else:
        sys.stdout.write(text + "\n")


@app.command(name="import")
def import_(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="An export JSON file.")],
    strategy: Annotated[str, typer.Option(help="merge, skip or replace")] = "merge",
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
    url: UrlOpt = None,
) -> None:
    """Import an export document."""
    try:
        doc = json.loads(path.read_text())
    except ValueError as exc:
        raise fail(f"{path} is not valid JSON: {exc}", 2) from None
    try:
        with target_of(ctx, data_dir, port, instance, url).client(timeout=300) as rest:
            data = rest.call(
                "POST", "/agentmemory/import", {"exportData": doc, "strategy": strategy}
            )
    except ServiceError as exc:
        raise fail(str(exc)) from None
    out.print_json(json.dumps(data))


@app.command(name="import-jsonl")
def import_jsonl(
    ctx: typer.Context,
    path: Annotated[
        Path | None, typer.Argument(help="File or folder (default ~/.claude/projects).")
    ] = None,
    project: Annotated[str, typer.Option(help="Project of every session (default: by cwd).")] = "",
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
    url: UrlOpt = None,
) -> None:
    """Import Claude Code transcripts as sessions (marked imported, lessons learned); safe
    to run again (events keep their ids)."""
    from workers.cli import transcripts as tr

    root = path or Path.home() / ".claude" / "projects"
    if not root.exists():
        raise fail(f"{root} does not exist", 2)
    files = tr.find_transcripts(root)
    sessions: set[str] = set()
    events = stored = lessons = 0
    try:
        with (
            target_of(ctx, data_dir, port, instance, url).client(timeout=600) as rest,
            Progress(console=err) as bar,
        ):
            task = bar.add_task("importing transcripts", total=len(files))
            for f in files:
                for text in tr.chunks(f):
                    body: dict[str, Any] = {"content": text, "name": f.name}
                    # As the hooks name it: AGENTMEMORY_PROJECT_NAME wins over the cwd's.
                    named = project or cli_settings().project_name
                    if named:
                        body["project"] = named
                    got = rest.call("POST", "/agentmemory/replay/import-jsonl", body)
                    sessions.update(got["sessionIds"])
                    events += got["observations"]
                    stored += got["stored"]
                    lessons += got["lessons"]
                bar.advance(task)
    except ServiceError as exc:
        raise fail(str(exc)) from None
    out.print(
        f"imported {len(sessions)} session(s), {events} event(s) from {len(files)} file(s): "
        f"{stored} new, {lessons} lesson(s)"
    )


project_app = typer.Typer(help="Projects: merge two that are one repository.", no_args_is_help=True)
app.add_typer(project_app, name="project")


@project_app.command("merge")
def project_merge(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(metavar="FROM", help="The project whose records move.")],
    into: Annotated[str, typer.Argument(metavar="INTO", help="The project they join.")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would move, move nothing.")
    ] = False,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
    url: UrlOpt = None,
) -> None:
    """Move every record of project FROM into project INTO (audited)."""
    body = {"from": source, "into": into, "dryRun": dry_run}
    try:
        with target_of(ctx, data_dir, port, instance, url).client(timeout=900) as rest:
            data = rest.call("POST", "/agentmemory/projects/merge", body)
    except ServiceError as exc:
        raise fail(str(exc)) from None
    moved = data.get("moved", {}) if isinstance(data, dict) else {}
    what = ", ".join(f"{n} {kind}" for kind, n in moved.items())
    verb = "would move" if dry_run else "moved"
    out.print(f"{verb} {what or 'nothing'} from {source!r} into {into!r}", highlight=False)
