"""Many slow uploads at once against attachd, for Scripts/bench-upload-memory (standard library).

  slow_uploads.py PORT KEY MODE CLIENTS MIB RATE FILE

Each of CLIENTS connections sends one body of MIB MiB — FILE (a small JPEG) followed by
zero padding after its end, which decoders ignore — at most RATE KiB/s, in 64 KiB writes.
A FILE of MIB MiB or more (a video) is sent as it is, as video/mp4.
MODE is `plain` (POST with Content-Length) or `resumable` (the iOS 26 header set: interop 8,
Upload-Complete, Upload-Length; the 104 is read before the body is sent). Every body is one
memoryview of one buffer: the client's memory does not grow with CLIENTS.
Prints one JSON line: answers by status, 104s seen, seconds, MiB sent.
"""

import asyncio
import collections
import json
import sys
import time


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    body = await reader.readexactly(length) if status >= 200 and length else b""
    return status, body


async def upload(
    port: int, key: str, mode: str, body: memoryview, content_type: str, rate: int, stats: dict
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
    fields = [
        f"Host: 127.0.0.1:{port}", f"Authorization: Bearer {key}", f"Content-Type: {content_type}",
        f"Content-Length: {len(body)}",
    ]
    if mode == "resumable":
        fields += ["Upload-Draft-Interop-Version: 8", "Upload-Complete: ?1", f"Upload-Length: {len(body)}"]
    writer.write(("POST /v1/attachments HTTP/1.1\r\n" + "\r\n".join(fields) + "\r\n\r\n").encode())
    await writer.drain()
    if mode == "resumable":
        status, _ = await read_response(reader)
        stats["interim"] += status == 104
    chunk = 64 << 10
    start = time.monotonic()
    sent = 0
    while sent < len(body):
        writer.write(body[sent:sent + chunk])
        await writer.drain()
        sent += min(chunk, len(body) - sent)
        # Paced: never ahead of RATE KiB/s since this upload started (0: as fast as it goes).
        ahead = sent / (rate * 1024) - (time.monotonic() - start) if rate > 0 else 0
        if ahead > 0:
            await asyncio.sleep(ahead)
    while True:
        status, _ = await read_response(reader)
        if status >= 200:
            break
        stats["interim"] += 1
    stats["status"][status] += 1
    stats["bytes"] += sent
    writer.close()


async def main() -> None:
    port, key, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    clients, mib, rate, image = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
    data = open(image, "rb").read()
    if len(data) >= mib << 20:
        body, content_type = memoryview(data), "video/mp4"
    else:
        buffer = bytearray(mib << 20)
        buffer[: len(data)] = data
        body, content_type = memoryview(buffer), "image/jpeg"
    stats = {"status": collections.Counter(), "interim": 0, "bytes": 0}
    start = time.monotonic()
    results = await asyncio.gather(
        *(upload(port, key, mode, body, content_type, rate, stats) for _ in range(clients)),
        return_exceptions=True
    )
    errors = [repr(r) for r in results if isinstance(r, BaseException)]
    print(json.dumps({
        "mode": mode, "clients": clients, "status": dict(stats["status"]), "interim_104": stats["interim"],
        "errors": len(errors), "first_error": errors[0] if errors else None,
        "seconds": round(time.monotonic() - start, 1), "mib_sent": round(stats["bytes"] / (1 << 20)),
    }))


asyncio.run(main())
