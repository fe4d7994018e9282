# Part of Scripts/bench-load (sourced, with --sandbox): what the decode sandbox costs under load.
# Runs `attachd serve` (every image decoded in a sandboxed child) and the benchmark-only
# `attachd-bench-unsandboxed serve` (the same service, images decoded in the server process;
# never shipped, see docs/benchmarks.md) side by side: both servers are up at once and idle
# while the other is measured, and the runs alternate on, off, off, on, … for each input and
# client count, so a neighbour slowing this machine for a while slows both alike. Prints each
# run, then the medians: uploads/s on ÷ off (goal ≥ 0.95), p99 added (goal ≤ 5 ms), CPU per
# image (the server, its helper and the helper's reaped children) and the helper's RSS.
# Uses bench-load's helpers and variables (WORK, PIDS, free_port, wait_http, load_run, row …).

start_server() { # binary data-dir → SERVER_PORT, SERVER_PID
  SERVER_PORT=$(free_port)
  mkdir -p "$2"
  ATTACHD_API_KEYS="bench:$KEY" ATTACHD_RATE_LIMIT=0 ATTACHD_CONCURRENT_UPLOADS_PER_KEY=0 \
    ATTACHD_ACCESS_LOG=off "$1" serve --host 127.0.0.1 --port "$SERVER_PORT" --data-dir "$2" \
    2> "$2.err" &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  wait_http "http://127.0.0.1:$SERVER_PORT/healthz" "$SERVER_PID"
}

helper_kib() { # server pid, VmRSS|VmHWM → KiB of its sandbox helper: the process the server
  # spawned and the PID namespace's init it forked, which runs the loop (shared pages twice)
  local total=0 helper loop
  for helper in $(pgrep -P "$1"); do
    for loop in "$helper" $(pgrep -P "$helper"); do
      total=$((total + $(awk -v k="$2:" '$1 == k {print $2}' "/proc/$loop/status" 2>/dev/null || echo 0)))
    done
  done
  echo "$total"
}

median() { sort -n | awk '{v[NR] = $1} END {if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

compare_sandbox() {
  local rounds="$SANDBOX_ROUNDS"
  echo "cores: $CORES; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "== sandbox on (attachd serve) vs off (attachd-bench-unsandboxed serve): wrk, ${SECONDS_PER_RUN} s per run after ${WARMUP} s warm-up, $rounds rounds alternating"
  start_server "$BIN" "$WORK/on"
  ON_PORT=$SERVER_PORT ON_PID=$SERVER_PID
  start_server "$UNSANDBOXED_BIN" "$WORK/off"
  OFF_PORT=$SERVER_PORT OFF_PID=$SERVER_PID
  local input name file clients round mode k
  for input in "${INPUTS[@]}"; do
    for mode in on off; do
      local port=$([ $mode = on ] && echo "$ON_PORT" || echo "$OFF_PORT")
      probe=$(probe_upload "$port" "${input#*:}")
      [ "$probe" = 201 ] || { echo "bench-load: sandbox $mode answered $probe: $(head -c 200 "$WORK/probe.json")" >&2; exit 1; }
    done
  done
  echo "helper RSS after start: on $(helper_kib "$ON_PID" VmRSS) KiB (the off server's idle helper: $(helper_kib "$OFF_PID" VmRSS) KiB)"
  row server input clients uploads/s "p50 ms" "p99 ms" "CPU ms/im" cores "responses by status"
  declare -gA S_RPS S_P50 S_P99 S_CPU
  for input in "${INPUTS[@]}"; do
    name="${input%%:*}"
    file="${input#*:}"
    for clients in 4 16; do
      for round in $(seq "$rounds"); do
        # on, off in odd rounds; off, on in even ones.
        local order=(on off)
        [ $((round % 2)) -eq 0 ] && order=(off on)
        for mode in "${order[@]}"; do
          if [ "$mode" = on ]; then
            load_run attachd-on "$ON_PORT" "$ON_PID" "$name" "$file" "$clients"
          else
            load_run attachd-off "$OFF_PORT" "$OFF_PID" "$name" "$file" "$clients"
          fi
          k="attachd-$mode/$name/$clients"
          S_RPS[$mode/$name/$clients]+="${RPS[$k]} "
          S_P50[$mode/$name/$clients]+="${P50[$k]} "
          S_P99[$mode/$name/$clients]+="${P99[$k]} "
          S_CPU[$mode/$name/$clients]+="${CPUMS[$k]} "
        done
      done
    done
  done
  local hwm rss
  rss=$(helper_kib "$ON_PID" VmRSS)
  hwm=$(helper_kib "$ON_PID" VmHWM)
  echo
  echo "== sandbox on ÷ off, medians of $rounds runs each (CPU per image: server + helper + decode children)"
  printf '%-11s  %7s  %16s  %8s  %16s  %9s  %16s  %8s\n' input clients "uploads/s on/off" "ratio" \
    "p99 ms on/off" "p99 added" "CPU ms/im on/off" "added"
  for input in "${INPUTS[@]}"; do
    name="${input%%:*}"
    for clients in 4 16; do
      local r_on r_off p_on p_off c_on c_off
      r_on=$(tr ' ' '\n' <<<"${S_RPS[on/$name/$clients]}" | grep . | median)
      r_off=$(tr ' ' '\n' <<<"${S_RPS[off/$name/$clients]}" | grep . | median)
      p_on=$(tr ' ' '\n' <<<"${S_P99[on/$name/$clients]}" | grep . | median)
      p_off=$(tr ' ' '\n' <<<"${S_P99[off/$name/$clients]}" | grep . | median)
      c_on=$(tr ' ' '\n' <<<"${S_CPU[on/$name/$clients]}" | grep . | median)
      c_off=$(tr ' ' '\n' <<<"${S_CPU[off/$name/$clients]}" | grep . | median)
      awk -v n="$name" -v c="$clients" -v ron="$r_on" -v roff="$r_off" -v pon="$p_on" -v poff="$p_off" \
        -v con="$c_on" -v coff="$c_off" 'BEGIN {
          printf "%-11s  %7d  %16s  %7.2f×  %16s  %6.0f ms  %16s  %+6.1f %%\n", n, c, ron " / " roff,
            ron / roff, pon " / " poff, pon - poff, con " / " coff, (con / coff - 1) * 100 }'
    done
  done
  echo "every run, on: uploads/s, p99 ms, CPU ms/im; off: the same (spread = noise of this machine)"
  for input in "${INPUTS[@]}"; do
    name="${input%%:*}"
    for clients in 4 16; do
      echo "  $name $clients clients  on: ${S_RPS[on/$name/$clients]}| ${S_P99[on/$name/$clients]}| ${S_CPU[on/$name/$clients]}  off: ${S_RPS[off/$name/$clients]}| ${S_P99[off/$name/$clients]}| ${S_CPU[off/$name/$clients]}"
    done
  done
  echo "goals: uploads/s ≥ 0.95× at 4 and 16 clients; p99 added ≤ 5 ms"
  echo "sandbox helper (on): VmRSS $((rss / 1024)) MiB, VmHWM $((hwm / 1024)) MiB (it forks the children; each child's own peak is its decode's)"
  echo "server peak RSS (VmHWM): on $(python3 "$BENCH/proctool.py" hwm "$ON_PID") MiB, off $(python3 "$BENCH/proctool.py" hwm "$OFF_PID") MiB"
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
}
