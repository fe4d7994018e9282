#!/usr/bin/env python3
"""Mutation fuzzer of whole uploads through a running `attachd serve` (issue 18).

Started by Scripts/fuzz-sandbox, which builds attachd; this file starts the server itself (so
it can tell whether the process is still alive), sends mutated small images as uploads over
keep-alive connections from several client threads, and checks every answer against the error
table in Sources/. Python standard library only: a test tool, never the product.

A finding (exit status 1): an answer that is not 201 + JSON, nor a problem+json whose status and
code are a row of the error table, nor a 503 with Retry-After; a 5xx other than 503; 503
`sandbox_unavailable` (the helper died under an input); no answer within the bound, or the
connection closed without one; the server process gone or /readyz not 200; a sandbox outcome
`violation` or `killed` in /metrics. Inputs that gave a finding, and the inputs whose decoding
child crashed (answered 422 `corrupt` by design; matched by the SHA-256 in the event log), are
written to the artifacts directory.
"""

import argparse
import collections
import hashlib
import http.client
import json
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".heic", ".heif", ".avif", ".webp", ".gif", ".tif", ".tiff", ".bmp")
# `--media video`: the movie fixtures (QuickTime, MP4, WebM), mutated as the images are (their
# boxes' fields too); each one the server takes also queues an MP4 job, so the rendition path
# in the sandbox is fuzzed with them.
VIDEO_SUFFIXES = (".mov", ".mp4", ".m4v", ".m4a", ".webm")


# --- the error table ----------------------------------------------------------------------------


def error_table():
    """code → statuses it may have, read from every `PublicError(status:code:)` and
    `retryLater("code"` in Sources/ (so the fuzzer follows the table as it changes)."""
    rows = collections.defaultdict(set)
    row = re.compile(r'status:\s*(\d{3}),\s*code:\s*"([a-z_]+)"')
    later = re.compile(r'retryLater\(\s*"([a-z_]+)"')
    for folder, _, files in os.walk(os.path.join(ROOT, "Sources")):
        for name in files:
            if not name.endswith(".swift"):
                continue
            with open(os.path.join(folder, name), encoding="utf-8") as source:
                text = source.read()
            for status, code in row.findall(text):
                rows[code].add(int(status))
            for code in later.findall(text):
                rows[code].add(503)
    return rows


# --- seeds and mutations -------------------------------------------------------------------------


def corpus_dir():
    beside = os.path.join(ROOT, "..", "shared", "corpus")
    # As the tests find it (Tests/TestSupport/Corpus.swift): ATTACHD_CORPUS, else beside the checkout.
    for candidate in (os.environ.get("ATTACHD_CORPUS"), beside):
        if candidate and os.path.isfile(os.path.join(candidate, "MANIFEST.tsv")):
            return candidate
    return None


def load_seeds(max_bytes, media="image"):
    paths = []
    corpus = corpus_dir() if media == "image" else None
    suffixes = IMAGE_SUFFIXES if media == "image" else VIDEO_SUFFIXES
    if corpus:
        with open(os.path.join(corpus, "MANIFEST.tsv"), encoding="utf-8") as manifest:
            next(manifest)
            paths += [os.path.join(corpus, line.split("\t", 1)[0]) for line in manifest if line.strip()]
    for folder, _, files in os.walk(os.path.join(ROOT, "Tests", "Fixtures")):
        paths += [os.path.join(folder, f) for f in files if f.lower().endswith(suffixes)]
    seeds = []
    for path in sorted(set(paths)):
        if os.path.isfile(path) and 0 < os.path.getsize(path) <= max_bytes:
            with open(path, "rb") as f:
                seeds.append((os.path.relpath(path, ROOT), f.read()))
    return seeds, corpus


INTERESTING8 = [0, 1, 0x7F, 0x80, 0xFF, 0x10, 0x20, 0x40]
INTERESTING32 = [0, 1, 2, 8, 16, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]
CONTAINERS = {b"meta", b"iprp", b"ipco", b"moov", b"trak", b"mdia", b"minf", b"stbl", b"dinf", b"iref", b"grpl"}


def structure_fields(data):
    """Offsets of the fields that carry a format's structure: PNG chunk lengths and types,
    JPEG marker bytes and segment lengths, ISOBMFF box sizes and types (recursing into
    containers; `meta` has 4 bytes of version and flags first). (offset, width) pairs."""
    fields = []
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        at = 8
        while at + 8 <= len(data) and len(fields) < 256:
            fields += [(at, 4), (at + 4, 4), (at + 8, 4)]
            (length,) = struct.unpack(">I", data[at : at + 4])
            at += 12 + length
    elif data[:2] == b"\xff\xd8":
        at = 2
        while at + 4 <= len(data) and len(fields) < 256:
            if data[at] != 0xFF:
                break
            fields += [(at + 1, 1), (at + 2, 2), (at + 4, 4)]
            if data[at + 1] == 0xDA:  # scan: the entropy-coded data follows, no more lengths
                break
            at += 2 + struct.unpack(">H", data[at + 2 : at + 4])[0]
    elif data[4:8] in (b"ftyp", b"styp"):

        def boxes(start, end, depth):
            at = start
            while at + 8 <= end and len(fields) < 256 and depth < 6:
                (size,) = struct.unpack(">I", data[at : at + 4])
                kind = data[at + 4 : at + 8]
                fields.append((at, 4))
                fields.append((at + 4, 4))
                fields.append((at + 8, 4))
                if size < 8 or at + size > end:
                    return
                if kind in CONTAINERS:
                    boxes(at + 8 + (4 if kind == b"meta" else 0), at + size, depth + 1)
                elif kind in (b"iinf", b"iloc", b"pitm", b"ipma", b"ispe", b"infe", b"hvcC", b"av1C"):
                    fields.append((at + 12, 4))
                    fields.append((at + 16, 4))
                at += size

        boxes(0, len(data), 0)
    return [(o, w) for o, w in fields if o + w <= len(data)]


class Mutator:
    def __init__(self, rng, seeds):
        self.rng = rng
        self.seeds = [data for _, data in seeds]
        self.operators = [
            self.flip_bits, self.interesting_byte, self.interesting_int, self.insert_chunk,
            self.delete_chunk, self.duplicate_chunk, self.truncate, self.splice,
            self.structure_field, self.structure_field, self.structure_field, self.head_bytes,
        ]

    def input(self):
        data = bytearray(self.rng.choice(self.seeds))
        for _ in range(self.rng.choice((1, 1, 2, 2, 3, 4, 6))):
            data = self.rng.choice(self.operators)(data)
            if not data:
                data = bytearray(self.rng.choice(self.seeds))
        return bytes(data)

    def position(self, data):
        return self.rng.randrange(len(data))

    def flip_bits(self, data):
        for _ in range(self.rng.randint(1, 8)):
            data[self.position(data)] ^= 1 << self.rng.randrange(8)
        return data

    def interesting_byte(self, data):
        data[self.position(data)] = self.rng.choice(INTERESTING8)
        return data

    def interesting_int(self, data, at=None):
        value = self.rng.choice(INTERESTING32 + [len(data), len(data) - 1, len(data) + 1])
        width = self.rng.choice((2, 4, 4))
        at = self.position(data) if at is None else at
        packed = struct.pack(">I" if self.rng.random() < 0.8 else "<I", value & 0xFFFFFFFF)[-width:]
        data[at : at + width] = packed[: len(data) - at]
        return data

    def chunk(self, data):
        at = self.position(data)
        return at, min(len(data) - at, self.rng.choice((1, 2, 4, 8, 16, 64, 256, 1024)))

    def insert_chunk(self, data):
        at = self.position(data)
        if self.rng.random() < 0.5:
            piece = bytes(self.rng.randrange(256) for _ in range(self.rng.choice((1, 4, 16, 64))))
        else:
            piece = bytes([self.rng.choice(INTERESTING8)]) * self.rng.choice((4, 64, 1024))
        data[at:at] = piece
        return data

    def delete_chunk(self, data):
        at, length = self.chunk(data)
        del data[at : at + length]
        return data

    def duplicate_chunk(self, data):
        at, length = self.chunk(data)
        piece = data[at : at + length] * self.rng.choice((1, 2, 8))
        data[self.position(data) : self.position(data)] = piece
        return data

    def truncate(self, data):
        return data[: self.rng.randint(1, len(data))]

    def splice(self, data):
        other = self.rng.choice(self.seeds)
        cut = self.rng.randint(1, len(data))
        return data[:cut] + other[self.rng.randrange(len(other)) :]

    def structure_field(self, data):
        fields = structure_fields(bytes(data))
        if not fields:
            return self.head_bytes(data)
        at, width = self.rng.choice(fields)
        choice = self.rng.random()
        if choice < 0.45:
            return self.interesting_int(data, at)
        if choice < 0.75:  # off by a little: lengths one short or long, counts one more
            value = int.from_bytes(data[at : at + width], "big") + self.rng.choice((-2, -1, 1, 2, 8))
            data[at : at + width] = (value % (1 << (8 * width))).to_bytes(width, "big")
            return data
        data[at + self.rng.randrange(width)] ^= 1 << self.rng.randrange(8)
        return data

    def head_bytes(self, data):
        for _ in range(self.rng.randint(1, 4)):
            data[self.rng.randrange(min(len(data), 512))] = self.rng.randrange(256)
        return data


# --- the server ----------------------------------------------------------------------------------


class Server:
    def __init__(self, binary, work, deadline):
        self.key = "fuzz_" + os.urandom(12).hex()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log_path = os.path.join(work, "attachd.err")
        env = dict(os.environ)
        env.update({
            "ATTACHD_API_KEYS": "fuzz:" + self.key, "ATTACHD_RATE_LIMIT": "0",
            "ATTACHD_CONCURRENT_UPLOADS_PER_KEY": "0", "ATTACHD_ACCESS_LOG": "off",
            "ATTACHD_PIPELINE_DEADLINE": str(deadline),
        })
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [binary, "serve", "--host", "127.0.0.1", "--port", str(self.port), "--data-dir", os.path.join(work, "data")],
            env=env, stdout=subprocess.DEVNULL, stderr=self.log)

    def get(self, path, timeout=10):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def wait_ready(self, seconds=60):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if self.process.poll() is not None:
                return False
            try:
                if self.get("/readyz", timeout=2)[0] == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def outcomes(self):
        _, body = self.get("/metrics")
        found = re.findall(r'^attachd_sandbox_decodes_total\{outcome="([a-z_]+)"\} (\d+)', body.decode(), re.M)
        return {outcome: int(count) for outcome, count in found}

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


# --- the run -------------------------------------------------------------------------------------


class Run:
    def __init__(self, args, server, seeds, table):
        self.args, self.server, self.seeds, self.table = args, server, seeds, table
        self.lock = threading.Lock()
        self.executions = 0
        self.statuses = collections.Counter()
        self.codes = collections.Counter()
        self.findings = []
        self.recent = collections.OrderedDict()  # SHA-256 → input, the last inputs sent
        self.stop = threading.Event()
        self.timeout = args.deadline + args.margin
        os.makedirs(args.artifacts, exist_ok=True)

    def save(self, kind, data, detail):
        digest = hashlib.sha256(data).hexdigest()
        path = os.path.join(self.args.artifacts, f"{kind}-{digest[:16]}")
        with open(path, "wb") as f:
            f.write(data)
        return path

    def finding(self, kind, data, detail):
        if self.stop.is_set() and kind in ("hang", "no-answer"):
            return  # the run is stopping, or the server is gone (one server-exit finding says so)
        path = self.save(kind, data, detail) if data is not None else "-"
        with self.lock:
            self.findings.append((kind, detail, path))
        print(f"fuzz-sandbox: FINDING {kind}: {detail} ({path})", file=sys.stderr, flush=True)

    def judge(self, status, headers, body):
        """None when the answer is one the API may give, else what is wrong with it."""
        content_type = headers.get("Content-Type", "")
        if status == 201:
            try:
                record = json.loads(body)
            except ValueError:
                return "201 without JSON"
            return None if isinstance(record, dict) and "id" in record else "201 without a record"
        if not content_type.startswith("application/problem+json"):
            return f"{status} that is not problem+json ({content_type})"
        try:
            problem = json.loads(body)
        except ValueError:
            return f"{status} with a problem body that is not JSON"
        code = problem.get("code")
        if problem.get("status") != status:
            return f"{status} whose body says status {problem.get('status')}"
        if status == 503 and not headers.get("Retry-After"):
            return f"503 {code} without Retry-After"
        if status not in self.table.get(code, ()):
            return f"{status} {code}: not a row of the error table"
        if status >= 500 and status != 503:
            return f"{status} {code}"
        if code == "sandbox_unavailable":
            return "503 sandbox_unavailable: the helper was lost under this load"
        return None

    def send(self, connection, data):
        connection.request("POST", "/v1/attachments", body=data, headers={
            "Authorization": "Bearer " + self.server.key, "Content-Type": "application/octet-stream"})
        response = connection.getresponse()
        body = response.read()
        return response.status, response.headers, body, response.will_close

    def client(self, index, budget):
        rng = random.Random(f"{self.args.seed}/{index}")
        mutator = Mutator(rng, self.seeds)
        connection = None
        end = self.args.end
        for _ in range(budget):
            if self.stop.is_set() or (end and time.monotonic() > end):
                break
            data = mutator.input()
            digest = hashlib.sha256(data).hexdigest()
            with self.lock:
                self.recent[digest] = data
                while len(self.recent) > 4096:
                    self.recent.popitem(last=False)
            answer = None
            started = time.monotonic()
            # A keep-alive connection the server closed while idle fails on reuse without any
            # answer; so one more try on a new connection before "closed without an answer".
            for attempt in (0, 1):
                fresh = connection is None
                if connection is None:
                    connection = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=self.timeout)
                try:
                    answer = self.send(connection, data)
                    break
                except (socket.timeout, TimeoutError):
                    connection.close()
                    connection = None
                    self.finding("hang", data, f"no answer within {self.timeout} s")
                    break
                except (http.client.HTTPException, OSError) as error:
                    connection.close()
                    connection = None
                    if isinstance(error, ConnectionRefusedError) and self.server.process.poll() is not None:
                        self.stop.set()  # the server is gone: one server-exit finding, not one per client
                    if fresh or attempt == 1:
                        self.finding("no-answer", data, f"connection ended without an answer: {error!r}")
                        break
            elapsed = time.monotonic() - started
            if answer is None:
                continue
            status, headers, body, will_close = answer
            if will_close:
                connection.close()
                connection = None
            problem_code = ""
            if status != 201:
                try:
                    problem_code = json.loads(body).get("code", "")
                except (ValueError, AttributeError):
                    problem_code = "?"
            wrong = self.judge(status, headers, body)
            if elapsed > self.timeout:
                wrong = f"answered after {elapsed:.1f} s"
            with self.lock:
                self.executions += 1
                self.statuses[status] += 1
                self.codes[f"{status} {problem_code or 'created'}"] += 1
            if wrong:
                self.finding("answer", data, wrong)
        if connection is not None:
            connection.close()

    def crashed_inputs(self, seen_lines):
        """Inputs whose child crashed or broke its filter, from the event log's SHA-256."""
        with open(self.server.log_path, "rb") as log:
            lines = log.read().decode("utf-8", "replace").splitlines()
        for line in lines[seen_lines:]:
            match = re.search(r'input_sha256\W+([0-9a-f]{64})', line)
            if not match:
                continue
            with self.lock:
                data = self.recent.get(match.group(1))
            kind = "violation" if "security" in line else "crash" if "crashed" in line else "stopped"
            if data is not None:
                self.save(kind, data, line)
        return len(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--runs", type=int, default=0, help="executions (0: until --seconds)")
    parser.add_argument("--seconds", type=float, default=0, help="wall-time bound (0: until --runs)")
    parser.add_argument("--jobs", type=int, default=6, help="concurrent keep-alive clients")
    parser.add_argument("--seed", default="random", help="mutation RNG seed; 'random' picks one")
    parser.add_argument("--max-seed-bytes", type=int, default=100 * 1024)
    parser.add_argument("--media", choices=["image", "video"], default="image", help="which fixtures seed it")
    parser.add_argument("--deadline", type=int, default=10, help="pipeline.deadline of the server, s")
    parser.add_argument("--margin", type=int, default=20, help="s past the deadline before an answer is a hang")
    parser.add_argument("--artifacts", default=os.path.join(ROOT, "Fuzz", "artifacts-sandbox"))
    args = parser.parse_args()
    if not args.runs and not args.seconds:
        args.runs = 10000
    if args.seed == "random":
        args.seed = str(random.SystemRandom().randrange(1 << 32))
    table = error_table()
    seeds, corpus = load_seeds(args.max_seed_bytes, args.media)
    if not seeds:
        sys.exit("fuzz-sandbox: no seeds (no corpus and no Tests/Fixtures images)")
    print(f"fuzz-sandbox: seed {args.seed}, {len(seeds)} seed files ≤ {args.max_seed_bytes} B "
          f"(corpus: {corpus or 'none'}), {args.jobs} clients, {len(table)} error codes", flush=True)

    work = tempfile.mkdtemp(prefix="attachd-fuzz-sandbox.")
    server = Server(args.bin, work, args.deadline)
    run = None
    try:
        if not server.wait_ready():
            sys.exit("fuzz-sandbox: the server did not become ready; its log: " + server.log_path)
        run = Run(args, server, seeds, table)
        args.end = time.monotonic() + args.seconds if args.seconds else None
        total = args.runs or 1 << 62
        budgets = [total // args.jobs + (1 if i < total % args.jobs else 0) for i in range(args.jobs)]
        started = time.monotonic()
        threads = [threading.Thread(target=run.client, args=(i, b), daemon=True) for i, b in enumerate(budgets)]
        for thread in threads:
            thread.start()
        seen_lines, last_report = 0, started
        while any(t.is_alive() for t in threads):
            time.sleep(1)
            seen_lines = run.crashed_inputs(seen_lines)
            if server.process.poll() is not None:
                run.finding("server-exit", None, f"attachd exited with {server.process.returncode}")
                run.stop.set()
                break
            if time.monotonic() - last_report >= 30:
                last_report = time.monotonic()
                try:
                    ready = server.get("/readyz")[0]
                    outcomes = server.outcomes()
                except OSError as error:
                    run.finding("server-unreachable", None, repr(error))
                    continue
                if ready != 200:
                    run.finding("not-ready", None, f"/readyz answered {ready}")
                rate = run.executions / (time.monotonic() - started)
                print(f"fuzz-sandbox: {run.executions} executions, {rate:.0f}/s, outcomes {dict(sorted(outcomes.items()))}",
                      flush=True)
        for thread in threads:
            thread.join(args.deadline + args.margin + 5)
        elapsed = time.monotonic() - started
        run.crashed_inputs(seen_lines)
        outcomes = {}
        if server.process.poll() is None:
            try:
                ready = server.get("/readyz")[0]
                outcomes = server.outcomes()
                if ready != 200:
                    run.finding("not-ready", None, f"/readyz answered {ready} at the end")
            except OSError as error:
                run.finding("server-unreachable", None, repr(error))
        elif not any(kind == "server-exit" for kind, _, _ in run.findings):
            run.finding("server-exit", None, f"attachd exited with {server.process.returncode}")
        for outcome in ("violation", "killed"):
            if outcomes.get(outcome):
                run.finding(f"outcome-{outcome}", None, f"{outcomes[outcome]} sandboxed decodes ended '{outcome}'")
        report(run, outcomes, elapsed, server)
    finally:
        if run is not None:
            run.stop.set()
        server.stop()
        subprocess.run(["rm", "-rf", os.path.join(work, "data")], check=False)
    sys.exit(1 if run is None or run.findings else 0)


def report(run, outcomes, elapsed, server):
    print()
    print(f"{'executions':<34}{run.executions:>10}")
    print(f"{'seconds':<34}{elapsed:>10.1f}")
    print(f"{'executions/s':<34}{run.executions / max(elapsed, 1e-9):>10.1f}")
    print(f"{'mutation seed':<34}{run.args.seed:>10}")
    print("-- answers (status code)")
    for key, count in sorted(run.codes.items()):
        print(f"  {key:<32}{count:>10}")
    print("-- attachd_sandbox_decodes_total{outcome}")
    for key, count in sorted(outcomes.items()):
        print(f"  {key:<32}{count:>10}")
    crashes = [f for f in os.listdir(run.args.artifacts) if f.startswith("crash-")]
    print(f"-- child crashes saved (422 corrupt by design): {len(crashes)} in {run.args.artifacts}")
    print(f"-- findings: {len(run.findings)}")
    for kind, detail, path in run.findings[:50]:
        print(f"  {kind}: {detail} ({path})")
    if run.findings:
        print(f"   server log: {server.log_path}")


if __name__ == "__main__":
    main()
