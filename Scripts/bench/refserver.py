"""Reference upload server for Scripts/bench-load: FastAPI + Pillow + pillow-heif.

Does the work attachd does for one upload, the way a Python service would usually write it:
check the Bearer key, read the raw body, open it, apply the EXIF orientation, convert to RGB,
shrink to fit 2048 px, encode JPEG q85 without metadata, write it to a file, fsync, answer
201 with a small JSON record. The CPU work runs in the thread pool (Pillow releases the GIL
while it decodes, resizes and encodes), so each uvicorn worker can use more than one core.

Differences from attachd, both in the reference's favour or neutral: it drops an ICC profile
instead of converting to sRGB, and it does no validation beyond what Pillow does. Against it:
exif_transpose loads the whole image before thumbnail(), so Pillow's JPEG draft mode
(shrink-on-load) does not come into play: this is the usual recipe, not a tuned one.

Run: BENCH_KEY=... BENCH_OUT=/some/dir uvicorn refserver:app --workers 2
"""

import hashlib
import hmac
import io
import os
import secrets

import pillow_heif
from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from PIL import Image, ImageOps

pillow_heif.register_heif_opener()

KEY = os.environ["BENCH_KEY"].encode()
OUT = os.environ["BENCH_OUT"]
MAX_EDGE = 2048
os.makedirs(OUT, exist_ok=True)

app = FastAPI()


def authorized(header: str | None) -> bool:
    if not header or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(header[7:].encode(), KEY)


def process(body: bytes) -> dict:
    with Image.open(io.BytesIO(body)) as image:
        image = ImageOps.exif_transpose(image)
        image = image.convert("RGB")
        image.thumbnail((MAX_EDGE, MAX_EDGE))
        buffer = io.BytesIO()
        # No exif= / icc_profile= arguments: Pillow then writes no metadata.
        image.save(buffer, "JPEG", quality=85)
        width, height = image.size
    data = buffer.getvalue()
    attachment_id = "att_" + secrets.token_urlsafe(16)
    path = os.path.join(OUT, attachment_id + ".jpg")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    return {
        "id": attachment_id,
        "content_type": "image/jpeg",
        "width": width,
        "height": height,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


@app.get("/healthz")
async def healthz() -> dict:
    return {"status": "ok"}


@app.post("/v1/attachments")
async def upload(request: Request) -> JSONResponse:
    if not authorized(request.headers.get("authorization")):
        return JSONResponse({"code": "unauthorized"}, status_code=401,
                            headers={"WWW-Authenticate": "Bearer"})
    body = await request.body()
    try:
        record = await run_in_threadpool(process, body)
    except (OSError, ValueError, Image.DecompressionBombError):
        return JSONResponse({"code": "unsupported_image"}, status_code=415)
    return JSONResponse(record, status_code=201,
                        headers={"Location": f"/v1/attachments/{record['id']}"})
