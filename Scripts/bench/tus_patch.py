"""What the tus checksum extension costs: one PATCH of SIZE MiB into a tus upload, without a
checksum (streamed into the upload), and with sha1 / sha256 / md5 (held aside, verified, then
written), in alternating rounds. Prints per kind the fastest round's wall time and attachd's CPU
time for it (from /proc), and the highest peak of attachd's resident memory while a PATCH ran,
above its resident memory before that PATCH.

    python3 tus_patch.py ATTACHD_BINARY [MiB] [rounds]
"""
import base64
import hashlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

KEY = "bench-key-0123456789abcdef0123"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_seconds(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def request(port, method, path, headers, body=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


def main():
    binary = sys.argv[1]
    mib = int(sys.argv[2]) if len(sys.argv) > 2 else 48
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    data = tempfile.mkdtemp(prefix="attachd-bench-tus-")
    port = free_port()
    environment = dict(os.environ, ATTACHD_API_KEYS="bench:" + KEY, ATTACHD_RATE_LIMIT="0",
                       ATTACHD_ACCESS_LOG="off", ATTACHD_MAX_UPLOAD_BYTES=str(mib + 16 << 20))
    server = subprocess.Popen([binary, "serve", "--port", str(port), "--data-dir", data],
                              env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                request(port, "GET", "/healthz", {})
                break
            except OSError:
                time.sleep(0.1)
        body = os.urandom(mib << 20)
        digests = {name: base64.b64encode(getattr(hashlib, name)(body).digest()).decode()
                   for name in ("sha1", "sha256", "md5")}
        results = {}
        auth = {"Authorization": "Bearer " + KEY, "Tus-Resumable": "1.0.0"}
        for _ in range(rounds):
            for kind in ("none", "sha1", "sha256", "md5"):
                created = request(port, "POST", "/v1/tus", dict(auth, **{"Upload-Length": str(len(body) + 1)}))
                path = created.getheader("Location").split(str(port), 1)[1]
                headers = dict(auth, **{"Content-Type": "application/offset+octet-stream", "Upload-Offset": "0"})
                if kind != "none":
                    headers["Upload-Checksum"] = kind + " " + digests[kind]
                before_rss = rss_kib(server.pid)
                peak = [before_rss]
                running = [True]

                def sample():
                    while running[0]:
                        peak[0] = max(peak[0], rss_kib(server.pid))
                        time.sleep(0.005)

                sampler = threading.Thread(target=sample)
                sampler.start()
                cpu = cpu_seconds(server.pid)
                started = time.perf_counter()
                response = request(port, "PATCH", path, headers, body)
                elapsed = time.perf_counter() - started
                cpu = cpu_seconds(server.pid) - cpu
                running[0] = False
                sampler.join()
                assert response.status == 204, (kind, response.status)
                assert response.getheader("Upload-Offset") == str(len(body))
                # The fastest round's time and CPU; the highest peak of any round.
                best = results.get(kind)
                rss = peak[0] - before_rss
                if best is None or elapsed < best[0]:
                    results[kind] = (elapsed, cpu, max(rss, best[2] if best else 0))
                else:
                    results[kind] = (best[0], best[1], max(rss, best[2]))
                request(port, "DELETE", path, auth)
        print("load average: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
        print("PATCH of %d MiB, best of %d rounds" % (mib, rounds))
        for kind, (elapsed, cpu, rss) in results.items():
            print("%-7s %6.3f s  %6.1f MiB/s  attachd CPU %6.3f s  peak RSS +%d KiB"
                  % (kind, elapsed, mib / elapsed, cpu, rss))
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
