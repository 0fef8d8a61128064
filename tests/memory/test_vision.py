"""Image search through an image-capable embedding provider (functions/surface/vision.py),
against a local stand-in of the provider speaking its wire format: Gemini's
`models/{model}:embedContent` and an OpenAI-compatible `/embeddings` taking images. The
stand-in is a multimodal model in miniature: a text's vector is its words hashed into 64
dimensions, an image's is the vector of the caption the test gave it, so a text finds the
image it describes. Keyless, both routes answer 501 naming the setting to set."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import rest_client

DIM = 64


def png(seed: int) -> bytes:
    """A small, valid PNG whose pixels depend on `seed`."""
    w = h = 4
    rows = b"".join(
        b"\x00" + bytes((seed * 37 + x * 11 + y * 5) % 256 for x in range(w * 3)) for y in range(h)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def text_vector(text: str) -> list[float]:
    v = [0.0] * DIM
    for word in text.lower().split():
        v[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIM] += 1.0
    return v


class Provider:
    """What the stand-in knows: each image's caption (by the image's bytes)."""

    def __init__(self) -> None:
        self.captions: dict[str, str] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def image_vector(self, data: bytes) -> list[float]:
        return text_vector(self.captions[hashlib.sha256(data).hexdigest()])


@pytest.fixture
def provider() -> Iterator[tuple[str, Provider]]:
    known = Provider()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            known.calls.append((self.path, dict(self.headers)))
            if self.path.endswith(":embedContent"):  # Gemini
                assert self.headers["x-goog-api-key"] == "gemini-test-key"
                part = body["content"]["parts"][0]
                if "text" in part:
                    values = text_vector(part["text"])
                else:
                    assert part["inline_data"]["mime_type"] == "image/png"
                    values = known.image_vector(base64.b64decode(part["inline_data"]["data"]))
                reply: dict[str, Any] = {"embedding": {"values": values}}
            elif self.path.endswith("/embeddings"):  # OpenAI-compatible, images as objects
                assert self.headers["authorization"] == "Bearer embed-test-key"
                (item,) = body["input"]
                vec = (text_vector(item) if isinstance(item, str)
                       else known.image_vector(base64.b64decode(item["image"])))  # fmt: skip
                reply = {"object": "list", "model": body["model"],
                         "data": [{"object": "embedding", "index": 0, "embedding": vec}]}  # fmt: skip
            else:
                self.send_error(404)
                return
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", known
    finally:
        server.shutdown()
        server.server_close()


async def test_keyless_vision_answers_501_naming_the_setting(
    memory_worker: Any, http_trigger: Any
) -> None:
    memory_worker()
    rest = await rest_client(http_trigger())
    try:
        for route, body in (("vision-search", {"queryText": "a red apple"}),
                            ("vision-embed", {"imageRef": "/tmp/x.png"})):  # fmt: skip
            r = await rest.post(f"/agentmemory/{route}", json=body)
            assert r.status_code == 501, r.text
            err = r.json()["error"]
            assert err["field"] == "AGENTMEMORY_IMAGE_EMBEDDINGS"
            assert "AGENTMEMORY_IMAGE_EMBEDDINGS=true" in err["message"]
        empty = await rest.post("/agentmemory/vision-search", json={})
        assert empty.status_code == 400  # the request is checked first, as upstream does
    finally:
        await rest.aclose()


async def test_the_flag_without_a_provider_names_the_provider_setting(
    memory_worker: Any, http_trigger: Any
) -> None:
    memory_worker(AGENTMEMORY_IMAGE_EMBEDDINGS="true")
    rest = await rest_client(http_trigger())
    try:
        r = await rest.post("/agentmemory/vision-search", json={"queryText": "a red apple"})
        assert r.status_code == 501, r.text
        assert r.json()["error"]["field"] == "GEMINI_API_KEY"
        assert "EMBEDDING_PROVIDER=openai" in r.json()["error"]["message"]
    finally:
        await rest.aclose()


async def _finds_the_image_a_text_describes(rest: Any, known: Provider, home: Path) -> None:
    apple, car = png(1), png(2)
    known.captions[hashlib.sha256(apple).hexdigest()] = "a red apple on a wooden table"
    known.captions[hashlib.sha256(car).hexdigest()] = "a blue car parked in the street"
    stored = home / ".agentmemory" / "shots" / "car.png"
    stored.parent.mkdir(parents=True)
    stored.write_bytes(car)
    a = await rest.post("/agentmemory/vision-embed",
                        json={"imageBase64": "data:image/png;base64," + base64.b64encode(apple).decode(),
                              "sessionId": "s-fruit", "observationId": "obs_apple"})  # fmt: skip
    assert a.status_code == 200, a.text
    assert a.json()["success"] is True and a.json()["dimensions"] == DIM
    apple_ref = a.json()["imageRef"]
    assert Path(apple_ref).read_bytes() == apple  # kept in the image store
    c = await rest.post(
        "/agentmemory/vision-embed", json={"imageRef": str(stored), "sessionId": "s-cars"}
    )
    assert c.status_code == 200 and c.json()["imageRef"] == str(stored), c.text

    r = await rest.post("/agentmemory/vision-search", json={"queryText": "red apple", "topK": 5})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["success"] is True and doc["total"] == 2
    first, second = doc["results"]
    assert first["imageRef"] == apple_ref and first["score"] > second["score"]
    assert (first["sessionId"], first["observationId"]) == ("s-fruit", "obs_apple")
    assert set(first) == {"imageRef", "score", "sessionId", "observationId", "updatedAt"}
    by_image = await rest.post("/agentmemory/vision-search",
                               json={"queryImageBase64": base64.b64encode(car).decode()})  # fmt: skip
    assert by_image.json()["results"][0]["imageRef"] == str(stored)
    only = await rest.post("/agentmemory/vision-search",
                           json={"queryText": "red apple", "sessionId": "s-cars"})  # fmt: skip
    assert [h["imageRef"] for h in only.json()["results"]] == [str(stored)]
    outside = await rest.post("/agentmemory/vision-embed", json={"imageRef": "/etc/hostname"})
    assert (
        outside.status_code == 403
        and "outside the allowed roots" in outside.json()["error"]["message"]
    )


async def test_gemini_multimodal_embeddings_find_the_image_a_text_describes(
    memory_worker: Any, http_trigger: Any, provider: tuple[str, Provider], tmp_path: Path
) -> None:
    url, known = provider
    memory_worker(
        AGENTMEMORY_IMAGE_EMBEDDINGS="true",
        GEMINI_API_KEY="gemini-test-key",
        GEMINI_BASE_URL=f"{url}/v1beta/openai",
    )
    rest = await rest_client(http_trigger())
    try:
        await _finds_the_image_a_text_describes(rest, known, tmp_path / "home")
        assert all(
            p.startswith("/v1beta/models/gemini-embedding-2:embedContent") for p, _ in known.calls
        )
    finally:
        await rest.aclose()


async def test_an_openai_compatible_provider_takes_images_too(
    memory_worker: Any, http_trigger: Any, provider: tuple[str, Provider], tmp_path: Path
) -> None:
    url, known = provider
    memory_worker(
        AGENTMEMORY_IMAGE_EMBEDDINGS="true",
        EMBEDDING_PROVIDER="openai",
        EMBEDDING_BASE_URL=f"{url}/v1",
        EMBEDDING_API_KEY="embed-test-key",
        AGENTMEMORY_IMAGE_MODEL="stand-in-clip",
    )
    rest = await rest_client(http_trigger())
    try:
        await _finds_the_image_a_text_describes(rest, known, tmp_path / "home")
        assert {p for p, _ in known.calls} == {"/v1/embeddings"}
    finally:
        await rest.aclose()
