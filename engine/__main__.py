"""`python -m engine run|stop|status`: the supervisor's command line; `stream delete NAME`
and `consumer delete STREAM DURABLE` remove what JetStream cannot change in place (a start
that meets one says so), so the next start creates it as declared."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time

from engine._config import ConfigError, load_config
from engine._instance import Instance, InstanceBusy
from engine._paths import ENV_CONFIG, Layout, current_layout, default_config, read_layout
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
    env = os.environ
    number = args.instance
    if number is None:
        number = lay.default_instance() if env.get(lay.env("INSTANCE")) else cfg_instance
    port = args.port or (None if env.get(lay.env("PORT")) else cfg_port)
    data_dir = args.data_dir or (None if env.get(lay.env("DATA_DIR")) else cfg_dir)
    return Instance.resolve(number, data_dir, port, lay)


def cmd_run(args: argparse.Namespace) -> int:
    from engine._bus_setup import StartError
    from engine._paths import load_settings
    from engine._supervisor import Supervisor

    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    load_settings(cfg.layout)
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
    ap = argparse.ArgumentParser(prog="python -m engine", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("run", "stop", "status", "stream", "consumer"):
        p = sub.add_parser(name)
        p.add_argument("--data-dir", default=None)
        p.add_argument("--instance", type=int, default=None)
        p.add_argument("--port", type=int, default=None, help="anchor of the port block")
        p.add_argument(
            "--config",
            default=os.environ.get(ENV_CONFIG) or str(default_config()),
            help="the engine's config (its `layout` names the data dir and ports)",
        )
        if name == "run":
            p.add_argument("--quiet", action="store_true", help="do not echo worker logs")
        if name == "stop":
            p.add_argument("--timeout", type=float, default=60.0)
        if name == "status":
            p.add_argument("--json", action="store_true")
        if name == "stream":
            p.add_argument("action", choices=["delete"])
            p.add_argument("name")
        if name == "consumer":
            p.add_argument("action", choices=["delete"])
            p.add_argument("stream")
            p.add_argument("durable")
    args = ap.parse_args(argv)
    commands = {"run": cmd_run, "stop": cmd_stop, "status": cmd_status}
    return commands.get(args.cmd, cmd_delete)(args)


if __name__ == "__main__":
    sys.exit(main())
