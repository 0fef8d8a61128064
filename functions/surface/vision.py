"""Image search (upstream's `mem::vision-embed` / `mem::vision-search`, 0.9.29+): images
embedded by an image-capable provider (image_provider.py) into the bucket `mem_images`,
one record per image, found by a text or by another image (cosine over unit vectors).

An image is a file under the allowed roots (functions/kernel/confine.py: the data dir,
~/.agentmemory, AGENTMEMORY_IMPORT_ROOT), or base64 the request carries, kept content-
addressed under ~/.agentmemory/images as upstream keeps its image store. Records made by
another model than the configured one are left out of a search: their vectors are of
another space (embed the images again after changing the model)."""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
from pathlib import Path
from typing import Annotated

import msgspec

from engine import Bucket, FunctionError
from functions.kernel.clock import now_iso
from functions.kernel.confine import OutsideRoots, confine
from functions.kernel.names import TEXT, at_least_one_of
from functions.surface.image_provider import ImageEmbedder

IMAGES_BUCKET = "mem_images"
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_B64 = 28 * 1024 * 1024
TOP_K_MAX = 50
_MAGIC = (
    (b"\x89PNG", "image/png", "png"),
    (b"\xff\xd8\xff", "image/jpeg", "jpg"),
    (b"GIF8", "image/gif", "gif"),
    (b"RIFF", "image/webp", "webp"),
)


class ImageRecord(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    image_ref: str
    vector: list[float]
    model: str
    dimensions: int
    updated_at: str
    session_id: str = ""
    observation_id: str = ""


class VisionSearchIn(msgspec.Struct, rename="camel", kw_only=True):
    query_text: str = ""
    query_image_ref: str = ""
    query_image_base64: Annotated[str, msgspec.Meta(max_length=MAX_B64)] = ""
    """Raw base64 or a `data:` URL."""
    top_k: Annotated[int, msgspec.Meta(ge=1)] = 10
    """Clamped to 50."""
    session_id: str = ""


VisionSearchRequest = Annotated[
    VisionSearchIn,
    msgspec.Meta(
        extra_json_schema=at_least_one_of(queryText=TEXT, queryImageRef=TEXT, queryImageBase64=TEXT)
    ),
]
"""A text or an image to search by."""


class VisionHit(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    image_ref: str
    score: float
    updated_at: str
    session_id: str = ""
    observation_id: str = ""


class VisionSearchOut(msgspec.Struct, kw_only=True):
    success: bool
    results: list[VisionHit]
    """Best first."""
    total: int
    """Images searched (after the session filter)."""


class VisionEmbedIn(msgspec.Struct, rename="camel", kw_only=True):
    image_ref: Annotated[str, msgspec.Meta(max_length=4096)] = ""
    """A file under the allowed roots."""
    image_base64: Annotated[str, msgspec.Meta(max_length=MAX_B64)] = ""
    """Or the image itself (ours): kept under ~/.agentmemory/images, its path the imageRef."""
    session_id: str = ""
    observation_id: str = ""


VisionEmbedRequest = Annotated[
    VisionEmbedIn,
    msgspec.Meta(extra_json_schema=at_least_one_of(imageRef=TEXT, imageBase64=TEXT)),
]


class VisionEmbedOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    image_ref: str
    dimensions: int


def images_dir() -> Path:
    return Path.home() / ".agentmemory" / "images"


def record_key(image_ref: str) -> str:
    return hashlib.sha256(image_ref.encode()).hexdigest()[:40]


def _mime(data: bytes) -> tuple[str, str]:
    for magic, mime, ext in _MAGIC:
        if data.startswith(magic):
            return mime, ext
    raise FunctionError(
        "UNPROCESSABLE", "not an image: PNG, JPEG, GIF or WebP bytes expected", field="image"
    )


def decode_b64(text: str, field: str) -> bytes:
    raw = text.split(",", 1)[1] if text.startswith("data:") else text
    try:
        data = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise FunctionError("BAD_REQUEST", f"{field} is not base64", field=field) from None
    if len(data) > MAX_IMAGE_BYTES:
        raise FunctionError("TOO_LARGE", f"images are {MAX_IMAGE_BYTES} bytes at most", field=field)
    return data


def read_image(ref: str, field: str) -> tuple[Path, bytes]:
    try:
        path = confine(ref)
    except OutsideRoots as refused:
        raise FunctionError("FORBIDDEN", str(refused), field=field) from None
    try:
        if path.stat().st_size > MAX_IMAGE_BYTES:
            raise FunctionError(
                "TOO_LARGE", f"images are {MAX_IMAGE_BYTES} bytes at most", field=field
            )
        return path, path.read_bytes()
    except OSError:
        raise FunctionError("NOT_FOUND", f"no image file at {path}", field=field) from None


def keep(data: bytes, b64: str) -> Path:
    """`data` saved content-addressed under the image store (an existing copy is kept)."""
    ext = _mime(data)[1]
    folder = images_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    digest = hashlib.sha256(b64.split(",", 1)[-1].encode()).hexdigest()
    path = folder / f"{digest}.{ext}"
    if not path.exists():
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return path


async def embed(images: Bucket, provider: ImageEmbedder, req: VisionEmbedIn) -> ImageRecord:
    """The image's record, stored."""
    if req.image_base64:
        data = decode_b64(req.image_base64, "imageBase64")
        path = await asyncio.to_thread(keep, data, req.image_base64)
    else:
        path, data = await asyncio.to_thread(read_image, req.image_ref, "imageRef")
    mime, _ext = _mime(data)
    vector = await provider.image(data, mime)
    ref = str(path)
    record = ImageRecord(
        image_ref=ref,
        vector=vector,
        model=f"{provider.name}:{provider.model}",
        dimensions=len(vector),
        updated_at=now_iso(),
        session_id=req.session_id,
        observation_id=req.observation_id,
    )
    await images.put(record_key(ref), record)  # the same image again: its record replaced
    return record


async def _query(provider: ImageEmbedder, req: VisionSearchIn) -> list[float]:
    # upstream's precedence: the text, then the inline image, then the stored one
    if req.query_text.strip():
        return await provider.text(req.query_text)
    if req.query_image_base64:
        data = decode_b64(req.query_image_base64, "queryImageBase64")
    else:
        _path, data = await asyncio.to_thread(read_image, req.query_image_ref, "queryImageRef")
    mime, _ext = _mime(data)
    return await provider.image(data, mime)


async def search(images: Bucket, provider: ImageEmbedder, req: VisionSearchIn) -> VisionSearchOut:
    query = await _query(provider, req)
    model = f"{provider.name}:{provider.model}"
    hits: list[VisionHit] = []
    async for _key, r in images.scan(">", ImageRecord):
        if req.session_id and r.session_id != req.session_id:
            continue
        if r.model != model or len(r.vector) != len(query):
            continue
        score = sum(a * b for a, b in zip(query, r.vector, strict=True))
        hits.append(
            VisionHit(
                image_ref=r.image_ref,
                score=round(score, 4),
                updated_at=r.updated_at,
                session_id=r.session_id,
                observation_id=r.observation_id,
            )
        )
    hits.sort(key=lambda h: h.score, reverse=True)
    return VisionSearchOut(success=True, results=hits[: min(req.top_k, TOP_K_MAX)], total=len(hits))
