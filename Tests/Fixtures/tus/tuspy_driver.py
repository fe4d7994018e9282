"""Drives tuspy (the tus project's Python client) against attachd for the Swift tests
(Tests/AppTests/Tus/TuspyTests.swift), through a loopback proxy that can cut or corrupt a PATCH.

    python3 tuspy_driver.py CONFIG_JSON

CONFIG_JSON: {"target": "127.0.0.1:PORT", "key": "...", "file": "...", "chunk_size": N,
              "mode": "plain" | "slow" | "cut" | "corrupt", "at": N, "checksum": bool, "pace_ms": N,
              "target_file": PATH, "retries": N, "retry_delay": S}

- plain:   upload through the proxy, nothing done to the bytes;
- cut:     the first PATCH's connection is closed (both ways) after `at` body bytes passed;
           tuspy (retries=5) asks HEAD for the offset and resumes from there;
- corrupt: one bit of body byte `at` of the first PATCH is flipped; with `checksum` tuspy's
           sha1 Upload-Checksum must get 460 (retries=0), then a second `upload()` resumes;
- slow:    the first PATCH is only paced (the test kills the server under it).

`target_file`, when given, names a file holding the target: it is read for every new connection,
so a test can restart the server on another port under the proxy's stable address.

`pace_ms` sends the faulted PATCH's body in 64 KiB pieces that far apart, as a phone's radio
does, instead of as fast as loopback goes (where a cut lands before the server read anything).

Prints one JSON object: the upload URL, the Upload-Offset of every PATCH the proxy saw, how
many connections it cut, the status of a failed first attempt, and the record GET returns.
"""
import json
import socket
import sys
import threading
import time

import requests
from tusclient import client as tus_client
from tusclient.exceptions import TusUploadFailed


class Proxy:
    """A TCP proxy on 127.0.0.1 that reads request heads to find PATCH bodies."""

    def __init__(self, target, mode, at, pace_ms, target_file=None):
        self.target = target
        self.target_file = target_file
        self.mode = mode
        self.at = at
        self.pace = pace_ms / 1000.0
        self.patch_offsets = []
        self.cuts = 0
        self.corrupted = 0
        self.done = False  # the one fault was made
        self.lock = threading.Lock()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                downstream, _ = self.listener.accept()
            except OSError:
                return
            target = self.target
            if self.target_file:
                target = open(self.target_file).read().strip()
            host, port = target.split(":")
            try:
                upstream = socket.create_connection((host, int(port)))
            except OSError:
                downstream.close()
                continue
            threading.Thread(target=self.pump_down, args=(upstream, downstream), daemon=True).start()
            threading.Thread(target=self.pump_up, args=(downstream, upstream), daemon=True).start()

    def pump_down(self, upstream, downstream):
        try:
            while True:
                data = upstream.recv(65536)
                if not data:
                    break
                downstream.sendall(data)
        except OSError:
            pass
        finally:
            for s in (upstream, downstream):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def pump_up(self, downstream, upstream):
        """Client → server, one request at a time: head, then Content-Length body bytes."""
        pending = b""
        try:
            while True:
                while b"\r\n\r\n" not in pending:
                    data = downstream.recv(65536)
                    if not data:
                        raise EOFError
                    pending += data
                head, pending = pending.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method = lines[0].split(" ")[0]
                fields = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    fields[name.strip().lower()] = value.strip()
                length = int(fields.get("content-length", "0"))
                is_patch = method == "PATCH" or fields.get("x-http-method-override") == "PATCH"
                with self.lock:
                    fault = is_patch and not self.done and self.mode in ("cut", "corrupt", "slow")
                    if fault:
                        self.done = True
                    if is_patch:
                        self.patch_offsets.append(int(fields.get("upload-offset", "-1")))
                upstream.sendall(head + b"\r\n\r\n")
                sent = 0
                while sent < length:
                    if not pending:
                        pending = downstream.recv(65536)
                        if not pending:
                            raise EOFError
                    limit = length - sent
                    if fault and self.pace > 0:
                        limit = min(limit, 65536)
                        time.sleep(self.pace)
                    piece, pending = pending[:limit], pending[limit:]
                    if fault and self.mode == "cut" and sent + len(piece) >= self.at:
                        upstream.sendall(piece[: self.at - sent])
                        with self.lock:
                            self.cuts += 1
                        raise EOFError
                    if fault and self.mode == "corrupt" and sent <= self.at < sent + len(piece):
                        index = self.at - sent
                        piece = piece[:index] + bytes([piece[index] ^ 0x01]) + piece[index + 1 :]
                        with self.lock:
                            self.corrupted += 1
                    upstream.sendall(piece)
                    sent += len(piece)
        except (OSError, EOFError):
            pass
        finally:
            for s in (downstream, upstream):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()


def main():
    config = json.loads(sys.argv[1])
    proxy = Proxy(config["target"], config["mode"], config.get("at", 0), config.get("pace_ms", 0),
                  config.get("target_file"))
    base = "http://127.0.0.1:%d" % proxy.port
    auth = {"Authorization": "Bearer " + config["key"]}
    my_client = tus_client.TusClient(base + config.get("path", "/v1/tus"), headers=auth)
    checksum = config.get("checksum", False)
    retries = config.get("retries", 0 if config["mode"] == "corrupt" else 5)
    uploader = my_client.uploader(
        config["file"], chunk_size=config["chunk_size"], retries=retries,
        retry_delay=config.get("retry_delay", 0.2),
        metadata={"filename": "photo.jpg"}, upload_checksum=checksum)
    first_failure = None
    try:
        uploader.upload()
    except TusUploadFailed as error:
        first_failure = error.status_code
        uploader.retries = 5
        uploader.upload()
    record = requests.get(uploader.url, headers=dict(auth, **{"Tus-Resumable": "1.0.0"}), timeout=30)
    head = requests.head(uploader.url, headers=dict(auth, **{"Tus-Resumable": "1.0.0"}), timeout=30)
    print(json.dumps({
        "url": uploader.url,
        "patch_offsets": proxy.patch_offsets,
        "cuts": proxy.cuts,
        "corrupted": proxy.corrupted,
        "first_failure": first_failure,
        "status": record.status_code,
        "content_location": record.headers.get("Content-Location"),
        "head_offset": head.headers.get("Upload-Offset"),
        "head_metadata": head.headers.get("Upload-Metadata"),
        "record": record.json(),
    }))


if __name__ == "__main__":
    main()
