# Part of Scripts/bench-load (sourced, with --backend s3): starts a PostgreSQL and a SeaweedFS of
# its own on 127.0.0.1 (as Tests/TestSupport does), then loads attachd on filesystem + SQLite and
# on S3 + PostgreSQL with the same 12 MP JPEG and prints the comparison. Uses bench-load's
# helpers and variables (WORK, PIDS, STOPS, free_port, start_attachd, load_run, row …).

start_postgres() {
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -x "$PG_BIN/initdb" ] || { echo "bench-load: no PostgreSQL server (Scripts/install-deps installs postgresql-15)" >&2; exit 1; }
  PG_DIR="$WORK/postgres"
  mkdir -p "$PG_DIR"
  local password
  password="pw$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  printf '%s\n' "$password" > "$PG_DIR/password"
  AS_PG=()
  if [ "$(id -u)" -eq 0 ]; then
    # initdb refuses to run as root: the server runs as the postgres user, as in the tests.
    chmod 755 "$WORK"
    chown -R postgres "$PG_DIR"
    AS_PG=(runuser -u postgres --)
  fi
  "${AS_PG[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -U attachd -E UTF8 --locale=C --auth-local=trust \
    --auth-host=scram-sha-256 --pwfile="$PG_DIR/password" --no-instructions >/dev/null
  PG_PORT=$(free_port)
  # fsync and synchronous_commit stay on (the defaults): SQLite runs with synchronous = FULL.
  "${AS_PG[@]}" "$PG_BIN/pg_ctl" start -w -t 60 -D "$PG_DIR/data" -l "$PG_DIR/server.log" \
    -o "-p $PG_PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$PG_DIR" >/dev/null
  STOPS+=("${AS_PG[*]} $PG_BIN/pg_ctl stop -m fast -D $PG_DIR/data >/dev/null 2>&1")
  PG_PID=$(head -1 "$PG_DIR/data/postmaster.pid")
  "$PG_BIN/psql" -X -q -h "$PG_DIR" -p "$PG_PORT" -U attachd -d postgres -c "CREATE DATABASE attachd"
  POSTGRES_URL="postgresql://attachd:$password@127.0.0.1:$PG_PORT/attachd"
  PG_VERSION=$("$PG_BIN/postgres" --version | awk '{print $3}')
}

start_seaweedfs() {
  WEED="$ROOT/.build/test-tools/seaweedfs/bin/weed"
  [ -x "$WEED" ] || "$ROOT/Scripts/install-deps" >&2
  S3_DIR="$WORK/seaweedfs"
  mkdir -p "$S3_DIR/data"
  S3_KEY="AKIA$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n' | tr a-f A-F)"
  S3_SECRET="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  printf '{"identities":[{"name":"bench","credentials":[{"accessKey":"%s","secretKey":"%s"}],"actions":["Admin","Read","Write","List","Tagging"]}]}\n' \
    "$S3_KEY" "$S3_SECRET" > "$S3_DIR/s3.json"
  # Each service also listens on port + 10 000 (gRPC): pairs of free ports below the ephemeral range.
  read -r WEED_MASTER WEED_VOLUME WEED_FILER S3_PORT WEED_ADMIN < <(python3 - <<'PY'
import random, socket
def free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False
ports = []
while len(ports) < 5:
    p = random.randint(10000, 21999)
    if p not in ports and free(p) and free(p + 10000):
        ports.append(p)
print(*ports)
PY
)
  "$WEED" mini -ip=127.0.0.1 -ip.bind=127.0.0.1 -dir="$S3_DIR/data" -s3.config="$S3_DIR/s3.json" \
    -master.port="$WEED_MASTER" -volume.port="$WEED_VOLUME" -filer.port="$WEED_FILER" -s3.port="$S3_PORT" \
    -admin.port="$WEED_ADMIN" -admin.ui=false -s3.port.iceberg=0 -s3.port.lance=0 -webdav=false \
    -master.telemetry=false -master.volumeSizeLimitMB=64 -volume.max=200 \
    -filer.localSocket="$S3_DIR/filer.sock" -s3.localSocket="$S3_DIR/s3.sock" > "$S3_DIR/weed.log" 2>&1 &
  WEED_PID=$!
  PIDS+=("$WEED_PID")
  STOPS+=("rm -f /tmp/seaweedfs-*-grpc-$((WEED_MASTER + 10000)).sock /tmp/seaweedfs-*-grpc-$((WEED_VOLUME + 10000)).sock /tmp/seaweedfs-*-grpc-$((WEED_FILER + 10000)).sock /tmp/seaweedfs-*-grpc-$((S3_PORT + 10000)).sock /tmp/seaweedfs-*-grpc-$((WEED_ADMIN + 10000)).sock")
  # Ready once the S3 gateway answers and the master knows the volume server.
  for _ in $(seq 600); do
    if curl -s -o /dev/null "http://127.0.0.1:$S3_PORT/" &&
      curl -s "http://127.0.0.1:$WEED_MASTER/dir/status" | grep -q '"DataNodes":\[{'; then
      break
    fi
    kill -0 "$WEED_PID" 2>/dev/null || { echo "bench-load: weed exited:" >&2; tail -20 "$S3_DIR/weed.log" >&2; exit 1; }
    sleep 0.1
  done
  S3_BUCKET=attachd-bench
  local status
  status=$(curl -s -o /dev/null -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:s3" --user "$S3_KEY:$S3_SECRET" \
    -H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" \
    -X PUT "http://127.0.0.1:$S3_PORT/$S3_BUCKET")
  [ "$status" = 200 ] || { echo "bench-load: creating the bucket answered $status" >&2; exit 1; }
  WEED_VERSION=$("$WEED" version 2>/dev/null | awk '{print $3; exit}')
}

compare_backends() {
  local input=12MP-JPEG
  echo "cores: $CORES; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "input: 12MP-JPEG = 3024×4032, $(size_mb "$JPEG12") MB (the corpus HEIC re-encoded q92)"
  start_postgres
  start_seaweedfs
  echo "backends: PostgreSQL $PG_VERSION (fsync on), SeaweedFS $WEED_VERSION (weed mini), both on 127.0.0.1"
  echo
  echo "== storage backends: wrk, POST /v1/attachments (raw body, Bearer), ${SECONDS_PER_RUN} s per run after ${WARMUP} s warm-up"
  row server input clients uploads/s "p50 ms" "p99 ms" "CPU ms/im" cores "responses by status"
  local name
  for name in attachd-fs attachd-s3; do
    ATTACHD_ENV=()
    EXTRA_PIDS=()
    if [ "$name" = attachd-s3 ]; then
      ATTACHD_ENV=(ATTACHD_STORAGE_BACKEND=s3 "ATTACHD_S3_ENDPOINT=http://127.0.0.1:$S3_PORT"
        "ATTACHD_S3_BUCKET=$S3_BUCKET" "ATTACHD_S3_ACCESS_KEY_ID=$S3_KEY" "ATTACHD_S3_SECRET_ACCESS_KEY=$S3_SECRET"
        ATTACHD_INDEX_BACKEND=postgres "ATTACHD_POSTGRES_URL=$POSTGRES_URL")
      EXTRA_PIDS=("$WEED_PID" "$PG_PID")
    fi
    start_attachd "$WORK/$name-data"
    local probe
    probe=$(probe_upload "$ATTACHD_PORT" "$JPEG12")
    if [ "$probe" != 201 ]; then
      echo "bench-load: $name answered $probe: $(head -c 300 "$WORK/probe.json")" >&2
      tail -5 "$WORK/attachd.err" >&2
      exit 1
    fi
    for clients in 4 16; do
      load_run "$name" "$ATTACHD_PORT" "$ATTACHD_PID" "$input" "$JPEG12" "$clients"
    done
    stop_attachd
  done
  echo "CPU ms/im: attachd's CPU time ÷ images it finished (see the top of bench-load); cores: attachd's"
  echo "CPU time during the run ÷ its length"
  echo
  echo "== S3 + PostgreSQL ÷ filesystem + SQLite"
  for clients in 4 16; do
    local fs="attachd-fs/$input/$clients" s3="attachd-s3/$input/$clients"
    awk -v f="${RPS[$fs]}" -v s="${RPS[$s3]}" -v fc="${CPUMS[$fs]}" -v sc="${CPUMS[$s3]}" \
      -v e="${EXTRA_CPUMS[$s3]}" -v c="$clients" 'BEGIN {
        printf "%2d clients: uploads/s %.0f %% (%.1f vs %.1f; goal ≥ 80 %%); attachd CPU per image %s vs %s ms;", \
          c, (f > 0 ? 100 * s / f : 0), s, f, sc, fc
        printf " SeaweedFS + PostgreSQL CPU per image %s ms\n", e
      }'
  done
  echo
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
}
