"""Two embedded servers, each its own JetStream domain, joined by one leaf link that carries
only what the hub's leaf user may exchange: a shared stream is sourced across the link both
ways and catches up after the link was down; the account's other streams (KV buckets
included) and their JetStream API stay on their own server."""

from __future__ import annotations

import asyncio
import secrets
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from nats.aio.msg import Msg

from engine import Client, FunctionError, Source, connect
from engine._nats_server import LeafNodes, LeafRemote, LeafTls, leaf_allowlist
from engine.server import NatsServer
from tests.fixtures import eventually, free_port

SHARED = "SHARED"


def _servers(tmp: Path, share: list[str]) -> tuple[NatsServer, NatsServer]:
    password = secrets.token_urlsafe(16)
    allow = leaf_allowlist([SHARED], share)
    hub = NatsServer(
        store_dir=tmp / "a",
        domain="a",
        server_name="hub",
        user="engine",
        password="pw",
        leafnodes=LeafNodes(listen=f"127.0.0.1:{free_port()}", password=password, allow=allow),
    ).start()
    assert hub.leaf_port
    spoke = NatsServer(
        store_dir=tmp / "b",
        domain="b",
        server_name="spoke",
        user="engine",
        password="pw",
        leafnodes=LeafNodes(
            remotes=[
                LeafRemote(
                    url=f"nats-leaf://127.0.0.1:{hub.leaf_port}", user="leaf", password=password
                )
            ]
        ),
    ).start()
    return hub, spoke


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[tuple[Client, Client]]:
    hub, spoke = _servers(tmp_path, ["hello.>"])
    ca = Client(await connect(f"nats://engine:pw@127.0.0.1:{hub.client_port}"))
    cb = Client(await connect(f"nats://engine:pw@127.0.0.1:{spoke.client_port}"))
    yield ca, cb
    for c in (ca, cb):
        await c.nc.close()
    spoke.kill()
    hub.kill()


async def _linked(ca: Client, cb: Client) -> None:
    """Until a shared core subject crosses from hub to spoke (client requests do not cross:
    their replies are not shared)."""
    got = asyncio.Event()

    async def on(msg: object) -> None:
        got.set()

    sub = await cb.nc.subscribe("hello.ping", cb=on)

    async def up() -> bool:
        await ca.nc.publish("hello.ping", b"")
        await asyncio.sleep(0.1)
        return got.is_set()

    await eventually(up, timeout=15, what="the leaf link")
    await sub.unsubscribe()


async def test_a_shared_stream_is_sourced_across_the_link_both_ways(
    pair: tuple[Client, Client],
) -> None:
    ca, cb = pair
    await _linked(ca, cb)
    sa = await ca.stream(
        SHARED, ["log.a.>"], sources=[Source(SHARED, "b", "log.b.>")], max_msgs_per_subject=1
    ).ensure()
    sb = await cb.stream(SHARED, ["log.b.>"]).ensure()
    await sb.set_sources([Source(SHARED, "a", "log.a.>")])
    await sa.publish("log.a.one", b"from a")
    await sb.publish("log.b.one", b"from b")

    async def both() -> bool:
        return (await sa.info()).messages == 2 and (await sb.info()).messages == 2

    await eventually(both, timeout=10, what="each side holding both messages")
    [state] = await sb.sources()
    assert state.source == Source(SHARED, "a", "log.a.>") and state.lag == 0
    # Neither side copied back what it had copied: the filters name the origin.
    await asyncio.sleep(0.5)
    assert (await sa.info()).messages == 2 and (await sb.info()).messages == 2


async def test_private_streams_and_their_api_stay_on_their_server(
    pair: tuple[Client, Client],
) -> None:
    ca, cb = pair
    await _linked(ca, cb)
    kva = await ca.bucket("private_bucket")
    kvb = await cb.bucket("private_bucket")
    pa = await ca.stream("PRIV", ["priv.>"]).ensure()
    pb = await cb.stream("PRIV", ["priv.>"]).ensure()
    await kva.put("k", {"secret": "hub"})
    await kvb.put("k2", {"secret": "spoke"})
    await pa.publish("priv.x", b"hub only")
    await pb.publish("priv.y", b"spoke only")
    await asyncio.sleep(1.0)
    assert (await pa.info()).messages == 1 and (await pb.info()).messages == 1
    assert await kvb.get("k") is None and await kva.get("k2") is None
    # Sourcing goes through the peer's JetStream API, which answers for the shared stream
    # only: a stream on the spoke asking for the hub's private ones copies nothing.
    steal = cb.stream(
        "STEAL", ["steal.>"], sources=[Source("PRIV", "a"), Source("KV_private_bucket", "a")]
    )
    await steal.ensure()
    sb = await cb.stream(SHARED, ["log.b.>"], sources=[Source(SHARED, "a")]).ensure()
    sa = await ca.stream(SHARED, ["log.a.>"]).ensure()
    await sa.publish("log.a.1", b"shared")
    await eventually(lambda: _count(sb, 1), timeout=10, what="the shared stream copied")
    await asyncio.sleep(1.0)
    assert (await steal.info()).messages == 0
    # Core subjects cross only when shared.
    seen: list[bytes] = []

    async def on(msg: Msg) -> None:
        seen.append(msg.data)

    await cb.nc.subscribe("hello.x", cb=on)
    await cb.nc.subscribe("other.x", cb=on)
    await asyncio.sleep(0.3)
    await ca.nc.publish("hello.x", b"shared")
    await ca.nc.publish("other.x", b"not shared")
    await eventually(lambda: asyncio.sleep(0, seen == [b"shared"]), timeout=5)
    await asyncio.sleep(0.3)
    assert seen == [b"shared"]


async def test_a_source_catches_up_after_the_link_was_down(tmp_path: Path) -> None:
    hub, spoke = _servers(tmp_path, ["hello.>"])
    ca = Client(await connect(f"nats://engine:pw@127.0.0.1:{hub.client_port}"))
    cb = Client(await connect(f"nats://engine:pw@127.0.0.1:{spoke.client_port}"))
    try:
        await _linked(ca, cb)
        sa = await ca.stream(SHARED, ["log.a.>"]).ensure()
        sb = cb.stream(SHARED, ["log.b.>"], sources=[Source(SHARED, "a", "log.a.>")])
        await sb.ensure()
        await sa.publish("log.a.0", b"0")
        await eventually(lambda: _count(sb, 1), timeout=10, what="the first copy")
        # The spoke goes away (its server stops); the hub keeps writing, and restarts too.
        await cb.nc.close()
        spoke.stop()
        for i in range(1, 50):
            await sa.publish(f"log.a.{i}", str(i).encode())
        await ca.nc.close()
        hub.stop()
        hub.port = hub.client_port or -1
        hub.start()
        ca = Client(await connect(f"nats://engine:pw@127.0.0.1:{hub.client_port}"))
        spoke.start()
        cb = Client(await connect(f"nats://engine:pw@127.0.0.1:{spoke.client_port}"))
        sa, sb = ca.stream(SHARED), cb.stream(SHARED)
        # A source that failed while the peer was away is retried with a growing backoff;
        # dropping and re-adding it retries now, and it resumes where it was.
        await sb.set_sources([])
        await sb.set_sources([Source(SHARED, "a", "log.a.>")])
        await eventually(lambda: _count(sb, 50), timeout=10, what="the spoke catching up")
        [state] = await sb.sources()
        assert state.lag == 0 and not state.error
        await sb.set_sources([])
        await sb.set_sources([Source(SHARED, "a", "log.a.>")])
        await sa.publish("log.a.50", b"50")
        await eventually(lambda: _count(sb, 51), timeout=10, what="the next one copied")
        assert (await sb.info()).last_seq == 51  # nothing was copied twice
    finally:
        for c in (ca, cb):
            if not c.nc.is_closed:
                await c.nc.close()
        spoke.kill()
        hub.kill()


async def test_setting_sources_of_a_missing_stream_is_not_found(client: Client) -> None:
    with pytest.raises(FunctionError) as ei:
        await client.stream("NOPE").set_sources([Source("X", "a")])
    assert ei.value.code == "NOT_FOUND"


async def _count(stream, n: int) -> bool:  # type: ignore[no-untyped-def]
    return (await stream.info()).messages == n


@pytest.mark.unit
def test_the_allowlist_names_the_shared_streams_api_and_plumbing_only() -> None:
    allow = leaf_allowlist(["TEAM"], ["topic.x"])
    assert "$JS.*.API.CONSUMER.CREATE.TEAM.>" in allow
    assert "topic.x" in allow
    assert not [a for a in allow if a.startswith("$KV") or a in (">", "$JS.*.API.>")]


def _config(tmp: Path, nats: str) -> Path:
    p = tmp / "engine.yaml"
    p.write_text("nats:\n" + nats + "workers: []\n")
    return p


@pytest.mark.unit
@pytest.mark.parametrize(
    ("nats", "says"),
    [
        ("  leafnodes: {listen: '127.0.0.1:7422'}\n", "needs nats.domain"),
        ("  domain: 'a.b'\n", "letters, digits"),
        (
            "  url: nats://x:4222\n  domain: a\n  leafnodes: {listen: '127.0.0.1:7422'}\n",
            "drop nats.url",
        ),
        ("  domain: a\n  leafnodes: {remotes: [{url: 'host:7422'}]}\n", "is not a URL"),
    ],
)
def test_a_leaf_config_that_cannot_work_is_refused_with_the_fix(
    tmp_path: Path, nats: str, says: str
) -> None:
    from engine._config import ConfigError, load_config

    with pytest.raises(ConfigError) as ei:
        load_config(_config(tmp_path, nats))
    assert says in str(ei.value)


@pytest.mark.unit
def test_the_server_config_carries_the_domain_the_link_and_its_permissions(tmp_path: Path) -> None:
    srv = NatsServer(
        store_dir=tmp_path,
        domain="laptop",
        user="engine",
        password="pw",
        leafnodes=LeafNodes(
            listen="0.0.0.0:7422",
            password="lpw",
            allow=leaf_allowlist(["TEAM"], []),
            remotes=[LeafRemote(url="nats-leaf://hub:7422", user="leaf", password="p w")],
        ),
    )
    conf = srv._config()
    assert 'domain: "laptop"' in conf and 'listen: "0.0.0.0:7422"' in conf
    assert 'url: "nats-leaf://leaf:p%20w@hub:7422"' in conf
    assert '"$JS.*.API.CONSUMER.CREATE.TEAM.>"' in conf and 'deny_exports: ["$KV.>"' in conf


def _openssl(tmp: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=tmp, check=True, capture_output=True, timeout=60)


def _certs(tmp: Path) -> Path:
    """A CA, the hub's certificate (for 127.0.0.1) and a spoke's client certificate."""
    d = tmp / "pki"
    d.mkdir()
    _openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=team ca")  # fmt: skip
    for name, ext in (
        ("hub", "subjectAltName=IP:127.0.0.1"),
        ("spoke", "extendedKeyUsage=clientAuth"),
    ):
        _openssl(d, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
                 "-out", f"{name}.csr", "-subj", f"/CN={name}")  # fmt: skip
        (d / f"{name}.ext").write_text(ext + "\n")
        _openssl(d, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-out", f"{name}.pem",
                 "-extfile", f"{name}.ext")  # fmt: skip
    return d


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
async def test_a_tls_leaf_link_with_client_certificates(tmp_path: Path) -> None:
    """The listener's `tls` (cert, key, the CA its peers' certificates are checked against,
    verify) and a remote's `tls` (its client certificate, the CA the hub's is checked
    against): the link comes up over TLS; a spoke without a client certificate is refused."""
    pki = _certs(tmp_path)
    password = secrets.token_urlsafe(16)
    hub = NatsServer(
        store_dir=tmp_path / "a", domain="a", server_name="hub", user="engine", password="pw",
        log_file=tmp_path / "a.log",
        leafnodes=LeafNodes(
            listen=f"127.0.0.1:{free_port()}", password=password,
            allow=leaf_allowlist([SHARED], ["hello.>"]),
            tls=LeafTls(str(pki / "hub.pem"), str(pki / "hub.key"), str(pki / "ca.pem"), True),
        ),
    ).start()  # fmt: skip

    def spoke(name: str, tls: LeafTls) -> NatsServer:
        url = f"nats-leaf://127.0.0.1:{hub.leaf_port}"
        remote = LeafRemote(url=url, user="leaf", password=password, tls=tls)
        return NatsServer(
            store_dir=tmp_path / name, domain=name, server_name=name, user="engine",
            password="pw",
            leafnodes=LeafNodes(remotes=[remote]),
        ).start()  # fmt: skip

    good = spoke("b", LeafTls(str(pki / "spoke.pem"), str(pki / "spoke.key"), str(pki / "ca.pem")))
    bad = spoke("c", LeafTls(ca_file=str(pki / "ca.pem")))
    ca = Client(await connect(f"nats://engine:pw@127.0.0.1:{hub.client_port}"))
    cb = Client(await connect(f"nats://engine:pw@127.0.0.1:{good.client_port}"))
    try:
        await _linked(ca, cb)
        log = tmp_path / "a.log"

        def refused() -> bool:
            text = log.read_text(errors="replace") if log.exists() else ""
            return "client didn't provide a certificate" in text

        await eventually(lambda: asyncio.sleep(0, refused()), timeout=15, what="c refused")
    finally:
        for c in (ca, cb):
            await c.nc.close()
        for s in (bad, good, hub):
            s.kill()
