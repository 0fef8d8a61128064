"""`python -m engine run|stop|status`: the supervisor's command line; `stream delete NAME`
and `consumer delete STREAM DURABLE` remove what JetStream cannot change in place (a start
that meets one says so), so the next start creates it as declared; `settings` checks the
environment as `run` would, `settings --markdown` prints the table of every variable."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path

from engine import settings
from engine._config import ConfigError, EngineConfig, load_config
from engine._instance import Instance, InstanceBusy
from engine._paths import Layout, current_layout, default_config, load_settings, read_layout
from engine._runtime import install_uvloop, setup_logging


def _instance(
    args: argparse.Namespace,
    cfg_instance: int | None = None,
    cfg_port: int | None = None,
    cfg_dir: str | None = None,
    layout: Layout | None = None,
) -> Instance:
    """The instance named by the command line, else by the layout's settings
    (`<PREFIX>_INSTANCE`, `_PORT`, `_DATA_DIR`), else by the config file."""
    lay = layout or current_layout()
    number = args.instance
    if number is None:
        number = lay.default_instance() if settings.is_set(lay.env("INSTANCE")) else cfg_instance
    port = args.port or (None if settings.is_set(lay.env("PORT")) else cfg_port)
    data_dir = args.data_dir or (None if settings.is_set(lay.env("DATA_DIR")) else cfg_dir)
    return Instance.resolve(number, data_dir, port, lay)


def cmd_run(args: argparse.Namespace) -> int:
    from engine._bus_setup import StartError
    from engine._supervisor import Supervisor

    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    load_settings(cfg.layout)
    # Every setting of every worker, checked before any process starts: a bad value stops
    # the start here, naming the variable, rather than a worker's start later.
    problems = check_settings(cfg)
    if problems:
        print("\n".join(f"error: {p}" for p in problems), file=sys.stderr)
        return 2
    inst = _instance(args, cfg.instance, cfg.port, cfg.data_dir, cfg.layout)

    async def main() -> int:
        sup = Supervisor(cfg, inst, echo_logs=not args.quiet, config_path=args.config)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, sup.stop_requested.set)
        # A stop asked for while workers are still starting (Ctrl-C during a slow start)
        # ends the start: what has started is stopped, without waiting for the rest.
        starting = asyncio.ensure_future(sup.start())
        asked = asyncio.ensure_future(sup.stop_requested.wait())
        await asyncio.wait({starting, asked}, return_when=asyncio.FIRST_COMPLETED)
        asked.cancel()
        if not starting.done():
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError, StartError, InstanceBusy):
                await starting
            print("engine stopped before it was ready", file=sys.stderr, flush=True)
            return 0
        try:
            starting.result()
        except (StartError, InstanceBusy) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        ports = ", ".join(f"{name} :{port}" for name, port in inst.ports.as_dict().items())
        fns = sup.functions()
        print(
            f"engine ready: instance {inst.number}, data {inst.data_dir}, NATS {sup.url}, "
            f"{ports}; {len(sup.workers)} worker process(es), {len(fns)} functions",
            file=sys.stderr,
            flush=True,
        )
        await sup.run_until_stopped()
        return 0

    setup_logging()
    install_uvloop()
    return asyncio.run(main())


def check_settings(cfg: EngineConfig) -> list[str]:
    """What is wrong in the environment of the supervisor and of each worker it would start
    (the process's, the config's `env:`, the worker's own), the layout's variables too."""
    base = settings.environ()
    envs = [("the supervisor", base)] + [
        (f"worker {w.name}", {**base, **cfg.env, **w.env}) for w in cfg.workers if w.enabled
    ]
    return settings.check(envs, cfg.layout.variables())


def cmd_settings(args: argparse.Namespace) -> int:
    """`settings --markdown`: the table of every variable (docs/CONFIG.md); without it,
    check this environment (and the settings file) as `run` would."""
    lay = read_layout(args.config)
    if args.markdown:
        home = str(lay.settings_file()).replace(str(Path.home()), "~", 1)
        print(settings.markdown(home, lay.variables()), end="")
        return 0
    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    load_settings(cfg.layout)
    problems = check_settings(cfg)
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    return 2 if problems else 0


def cmd_stop(args: argparse.Namespace) -> int:
    inst = _instance(args, layout=read_layout(args.config))
    pid = inst.running_pid()
    if pid is None:
        print(f"engine instance {inst.number} is not running (data dir {inst.data_dir})")
        return 0
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if not inst.is_locked():
            print(f"engine instance {inst.number} stopped")
            return 0
        time.sleep(0.1)
    print(f"engine (pid {pid}) still running after {args.timeout:.0f}s", file=sys.stderr)
    return 1


def cmd_status(args: argparse.Namespace) -> int:
    from engine._client import Client
    from engine._connect import connect
    from engine._supervisor import EngineStatus, status_json

    inst = _instance(args, layout=read_layout(args.config))
    info = inst.read_pidfile()
    if inst.running_pid() is None or not info:
        out = {"running": False, "instance": inst.number, "data_dir": str(inst.data_dir)}
        print(json.dumps(out) if args.json else f"engine instance {inst.number} is not running")
        return 1

    async def fetch() -> EngineStatus:
        creds = str(inst.credentials) if inst.credentials.exists() else None
        nc = await connect(
            info.get("nats_url"), creds, name="engine-status", max_reconnect_attempts=1
        )
        try:
            return await Client(nc).call("engine::status", None, response=EngineStatus, timeout=5)
        finally:
            await nc.close()

    try:
        st = asyncio.run(fetch())
    except Exception as exc:  # any bus failure (not yet connectable, timed out...): no trace
        print(
            f"engine is running (pid {info.get('pid')}) but did not answer: {exc}", file=sys.stderr
        )
        return 1
    if args.json:
        print(json.dumps({"running": True, **status_json(st)}))
    else:
        print(f"engine instance {st.instance} pid {st.pid} nats {st.nats_url}")
        for w in st.workers:
            print(
                f"  {w.name}.{w.replica:<3} {w.state:<9} pid={w.pid} "
                f"restarts={w.restarts} functions={','.join(w.functions)}"
            )
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from engine import _maintenance
    from engine._errors import FunctionError

    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    inst = _instance(args, cfg.instance, cfg.port, cfg.data_dir, cfg.layout)
    try:
        if args.cmd == "stream":
            said = asyncio.run(_maintenance.delete_stream(inst, cfg, args.name))
        else:
            said = asyncio.run(_maintenance.delete_consumer(inst, cfg, args.stream, args.durable))
    except FunctionError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    print(said)
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        config = settings.read(settings.declared(settings.WorkerIdentity, "config"))
    except settings.SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    ap = argparse.ArgumentParser(prog="python -m engine", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("run", "stop", "status", "stream", "consumer", "settings"):
        p = sub.add_parser(name)
        p.add_argument("--data-dir", default=None)
        p.add_argument("--instance", type=int, default=None)
        p.add_argument("--port", type=int, default=None, help="anchor of the port block")
        p.add_argument(
            "--config",
            default=str(config or default_config()),
            help="the engine's config (its `layout` names the data dir and ports)",
        )
        if name == "run":
            p.add_argument("--quiet", action="store_true", help="do not echo worker logs")
        if name == "stop":
            p.add_argument("--timeout", type=float, default=60.0)
        if name == "status":
            p.add_argument("--json", action="store_true")
        if name == "settings":
            p.add_argument(
                "--markdown", action="store_true", help="print the table of every variable"
            )
        if name == "stream":
            p.add_argument("action", choices=["delete"])
            p.add_argument("name")
        if name == "consumer":
            p.add_argument("action", choices=["delete"])
            p.add_argument("stream")
            p.add_argument("durable")
    try:
        args = ap.parse_args(argv)
        commands = {"run": cmd_run, "stop": cmd_stop, "status": cmd_status}
        commands["settings"] = cmd_settings
        return commands.get(args.cmd, cmd_delete)(args)
    except settings.SettingsError as exc:  # one read outside the start's check
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
