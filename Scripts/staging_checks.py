#!/usr/bin/env python3
"""The checks Scripts/staging runs against the compose stack it brought up.

Uses the stack as a user would (curl-like HTTP over loopback through HAProxy, tuspy for tus, the
IETF draft's header sets for resumable uploads) and breaks it as an operator would (podman stop /
start / restart of one service). Prints `ok` / `FAIL` lines; the exit status is the number of
failures (capped at 100). Everything it needs comes from the environment Scripts/staging sets:

  STAGING_PORT, STAGING_NODE_PORTS ("a,b"), STAGING_KEY, STAGING_PROJECT (container name prefix),
  STAGING_WORK (a scratch directory with the fixtures Scripts/staging made).
"""

import hashlib
import h11
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

PORT = int(os.environ["STAGING_PORT"])
NODE_PORTS = [int(p) for p in os.environ["STAGING_NODE_PORTS"].split(",")]
KEY = os.environ["STAGING_KEY"]
PROJECT = os.environ["STAGING_PROJECT"]
WORK = os.environ["STAGING_WORK"]
NODES = [f"{PROJECT}_attachd_1", f"{PROJECT}_attachd-b_1"]
AUTH = {"Authorization": f"Bearer {KEY}"}

failures = 0


def report(passed, text):
    global failures
    print(("ok   " if passed else "FAIL ") + text, flush=True)
    if not passed:
        failures += 1
    return passed


def request(method, path, body=b"", headers=None, port=PORT, timeout=30):
    """One request on its own connection, with h11 (which, unlike http.client, reads the 104
    interim answers of resumable uploads as what they are): (status, headers as a lower-cased dict
    with an interim answer's headers under the final ones, body)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        connection = h11.Connection(h11.CLIENT)
        fields = [("Host", f"127.0.0.1:{port}"), ("Connection", "close"), *(headers or {}).items()]
        if body or method in ("POST", "PATCH", "PUT"):
            fields.append(("Content-Length", str(len(body))))
        out = connection.send(h11.Request(method=method, target=path, headers=fields))
        if body:
            out += connection.send(h11.Data(data=body))
        out += connection.send(h11.EndOfMessage())
        sock.sendall(out)
        status, answer, data = None, {}, b""
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                connection.receive_data(sock.recv(65536))
            elif isinstance(event, (h11.InformationalResponse, h11.Response)):
                if status is not None:
                    answer["interim"] = answer.get("interim", "") + f"{status} "
                status = event.status_code
                answer.update({k.decode().lower(): v.decode() for k, v in event.headers})
            elif isinstance(event, h11.Data):
                data += event.data
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                return status, answer, data
    finally:
        sock.close()


def podman(*arguments, check=True):
    return subprocess.run(["podman", *arguments], check=check, capture_output=True, text=True).stdout


def access_lines(container):
    """The attachd access log of a node (its stdout), health checks left out."""
    out = subprocess.run(["podman", "logs", container], capture_output=True, text=True).stdout
    lines = []
    for line in out.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if "method" in entry and entry.get("path") not in ("/readyz", "/healthz"):
            lines.append(entry)
    return lines


def metadata_left(jpeg_path):
    """Tags of the kinds the input carried that exiftool still finds in an output."""
    out = subprocess.run(
        ["exiftool", "-j", "-a", "-G1", "-n", jpeg_path], check=True, capture_output=True, text=True
    ).stdout
    tags = json.loads(out)[0]
    private = ("GPS", "Make", "Model", "Artist", "UserComment", "Creator", "Copyright", "ImageDescription",
               "SerialNumber", "LensModel", "Software", "DateTimeOriginal")
    left = [k for k in tags if any(p in k.split(":")[-1] for p in private)]
    left += [k for k in tags if k.split(":")[0] in ("[XMP-dc]", "[XMP-x]", "[XMP-exif]", "[GPS]", "[IFD0]", "[ExifIFD]")]
    if tags.get("IFD0:Orientation", 1) not in (1, "1"):
        left.append("IFD0:Orientation")
    return sorted(set(left))


def read_back(record, name):
    """The stored JPEG from each node directly: same bytes, the record's digest, no metadata."""
    bodies = []
    for index, port in enumerate(NODE_PORTS):
        status, _, body = request("GET", record["url"], headers=AUTH, port=port)
        bodies.append(body if status == 200 else None)
        if status != 200:
            report(False, f"{name}: node {'ab'[index]} answered {status} for {record['url']}")
    if None in bodies:
        return
    same = bodies[0] == bodies[1] and hashlib.sha256(bodies[0]).hexdigest() == record["sha256"]
    report(same, f"{name}: read back from both nodes, the same {len(bodies[0])} bytes (sha256 of the record)")
    path = os.path.join(WORK, f"out-{record['id']}.jpg")
    with open(path, "wb") as f:
        f.write(bodies[0])
    left = metadata_left(path)
    report(not left and bodies[0][:2] == b"\xff\xd8",
           f"{name}: the output is a JPEG with no metadata left (exiftool: {', '.join(left) or 'none of GPS, make, model, artist, XMP'})")


def upload(path, content_type):
    with open(path, "rb") as f:
        body = f.read()
    status, _, data = request("POST", "/v1/attachments", body, {**AUTH, "Content-Type": content_type})
    return status, (json.loads(data) if status == 201 else data)


def check_plain_uploads():
    records = {}
    for name, path, content_type in [
        ("HEIC", os.path.join(WORK, "phone.heic"), "image/heic"),
        ("JPEG", os.path.join(WORK, "phone.jpg"), "image/jpeg"),
    ]:
        status, record = upload(path, content_type)
        if not report(status == 201, f"{name} upload through HAProxy: {status}"):
            print(f"     {record!r:.300}")
            continue
        records[name] = record
        read_back(record, name)
    if "JPEG" in records:
        r = records["JPEG"]
        report(r["width"] < r["height"] and max(r["width"], r["height"]) == 2048,
               f"JPEG: orientation 6 applied and 2048 px at most ({r['source']['width']}x{r['source']['height']} -> {r['width']}x{r['height']})")
    return records


def check_resumable():
    with open(os.path.join(WORK, "phone.jpg"), "rb") as f:
        body = f.read()
    half = len(body) // 2
    version = {**AUTH, "Upload-Draft-Interop-Version": "8"}
    status, headers, _ = request("POST", "/v1/attachments", body[:half], {**version, "Upload-Complete": "?0"})
    location = headers.get("location", "")
    interim = headers.get("interim", "").strip() or "no interim answer"
    if not report(status == 201 and "/v1/uploads/" in location and interim == "104",
                  f"resumable (interop 8): creation with half the bytes through HAProxy answered {interim}, then {status}"):
        return
    path = urllib.parse.urlsplit(location).path
    status, headers, _ = request("HEAD", path, headers=version)
    report(status == 204 and headers.get("upload-offset") == str(half),
           f"resumable: offset retrieval through HAProxy: {status}, Upload-Offset {headers.get('upload-offset')} of {half}")
    status, headers, data = request(
        "PATCH", path, body[half:],
        {**version, "Upload-Offset": str(half), "Upload-Complete": "?1", "Content-Type": "application/partial-upload"})
    if not report(status in (200, 201), f"resumable: the completing append answered {status}"):
        print(f"     {data[:300]!r}")
        return
    read_back(json.loads(data), "resumable")


def check_tus():
    from tusclient import client as tus

    path = os.path.join(WORK, "phone.jpg")
    uploader = tus.TusClient(f"http://127.0.0.1:{PORT}/v1/tus", headers=AUTH).uploader(
        path, chunk_size=64 * 1024, metadata={"filename": "IMG_0001.JPG"})
    try:
        uploader.upload()
    except Exception as error:  # tuspy raises its own TusCommunicationError and friends
        report(False, f"tus: tuspy's upload failed: {error}")
        return
    chunks = -(-os.path.getsize(path) // (64 * 1024))
    tus_path = urllib.parse.urlsplit(uploader.url).path
    status, headers, data = request("GET", tus_path, headers={**AUTH, "Tus-Resumable": "1.0.0"})
    location = headers.get("content-location", "")
    if not report(status == 200 and location.startswith("/v1/attachments/"),
                  f"tus: tuspy sent {chunks} PATCHes through HAProxy; the upload names its attachment ({status})"):
        return
    status, _, data = request("GET", location + "/meta", headers=AUTH)
    if report(status == 200, f"tus: the record: {status}"):
        read_back(json.loads(data), "tus")


def check_signed_links(record):
    parts = urllib.parse.urlsplit(record["signed_url"])
    link = parts.path + "?" + parts.query
    bodies = []
    for index, port in enumerate(NODE_PORTS):
        status, _, body = request("GET", link, port=port)
        bodies.append(body)
        report(status == 200 and hashlib.sha256(body).hexdigest() == record["sha256"],
               f"signed link (no key) on node {'ab'[index]}: {status}")
    forged = link[:-2] + ("AA" if not link.endswith("AA") else "BB")
    status, _, _ = request("GET", forged, port=NODE_PORTS[1])
    report(status in (401, 403), f"a signed link with a changed signature: {status}")


def check_spread():
    counts = [len([e for e in access_lines(node) if e["method"] in ("POST", "PATCH", "HEAD")]) for node in NODES]
    report(all(c > 0 for c in counts), f"uploads spread over both nodes (upload requests: a {counts[0]}, b {counts[1]})")


def post_heic(body):
    """One HEIC upload through HAProxy: its status, or the name of the socket error."""
    try:
        return request("POST", "/v1/attachments", body, {**AUTH, "Content-Type": "image/heic"})[0]
    except OSError as error:
        return type(error).__name__


def heic_bytes():
    with open(os.path.join(WORK, "phone.heic"), "rb") as f:
        return f.read()


class Sender:
    """Uploads the small HEIC through HAProxy back to back until stopped; keeps every status."""

    def __init__(self):
        self.body = heic_bytes()
        self.statuses = []
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while self.running:
            self.statuses.append(post_heic(self.body))
            time.sleep(0.1)

    def stop(self):
        self.running = False
        self.thread.join()
        return self.statuses


def address(container):
    return podman("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", container).strip()


def check_node_stop_and_start():
    node = NODES[1]
    before = address(node)
    sender = Sender()
    time.sleep(1)
    began = time.monotonic()
    podman("stop", "-t", "35", node)
    stopping = time.monotonic() - began
    time.sleep(3)
    statuses = sender.stop()
    bad = [s for s in statuses if s != 201]
    report(statuses and not bad,
           f"node b stopped ({stopping:.1f} s to stop): {len(statuses)} uploads sent meanwhile, {len(statuses) - len(bad)} answered 201"
           + (f", others: {bad[:10]}" if bad else ""))
    seen = len(access_lines(node))
    podman("start", node)
    started = time.monotonic()
    sender = Sender()
    served = None
    while time.monotonic() - started < 30:
        if len(access_lines(node)) > seen:
            served = time.monotonic() - started
            break
        time.sleep(0.2)
    statuses = sender.stop()
    after = address(node)
    moved = f"its address {'moved ' + before + ' -> ' + after if after != before else 'stayed ' + before}"
    report(served is not None and served <= 5,
           f"node b started again: it served an upload {served:.1f} s later ({moved})" if served is not None
           else f"node b started again: no upload reached it in 30 s ({moved})")
    bad = [s for s in statuses if s != 201]
    report(not bad, f"uploads while node b rejoined: {len(statuses)}, {len(statuses) - len(bad)} answered 201"
           + (f", others: {bad[:10]}" if bad else ""))


def started_at(container):
    return podman("inspect", "-f", "{{.State.StartedAt}}", container).strip()


def check_restart(service, earlier):
    container = f"{PROJECT}_{service}_1"
    nodes_before = [started_at(n) for n in NODES]
    podman("restart", "-t", "20", container)
    began = time.monotonic()
    body = heic_bytes()
    recovered = None
    last = None
    healthy = None
    while time.monotonic() - began < 90:
        if healthy is None and subprocess.run(["podman", "healthcheck", "run", container], capture_output=True).returncode == 0:
            healthy = time.monotonic() - began
        last = post_heic(body)
        if last == 201:
            recovered = time.monotonic() - began
            break
        time.sleep(0.5)
    untouched = [started_at(n) for n in NODES] == nodes_before
    report(recovered is not None and untouched,
           f"{service} restarted: uploads succeed again {recovered:.1f} s later ({service} itself healthy after "
           + (f"{healthy:.1f} s" if healthy is not None else "more") + "), attachd not restarted" if recovered is not None
           else f"{service} restarted: no upload succeeded in 90 s (last answer {last})")
    reads = [request("GET", earlier["url"], headers=AUTH, port=p)[0] for p in NODE_PORTS]
    report(reads == [200, 200], f"after the {service} restart, an earlier attachment reads from both nodes: {reads}")


def main():
    records = check_plain_uploads()
    check_resumable()
    check_tus()
    if "HEIC" in records:
        check_signed_links(records["HEIC"])
    check_spread()
    check_node_stop_and_start()
    earlier = records.get("HEIC")
    if earlier:
        check_restart("postgres", earlier)
        check_restart("seaweedfs", earlier)
    return min(failures, 100)


if __name__ == "__main__":
    sys.exit(main())
