-- wrk script for Scripts/bench-load: every request POSTs one file's bytes as the raw body
-- to /v1/attachments with a Bearer key, and every response's status is tallied (503s also
-- by whether they carried Retry-After).
-- Usage: wrk ... -s upload.lua http://127.0.0.1:PORT -- FILE KEY
-- done() prints one line: RESULT key=value ... for the calling script to parse.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  local file = assert(io.open(args[1], "rb"))
  local body = file:read("*a")
  file:close()
  -- Formatted once: wrk sends the same bytes for every request.
  request_bytes = wrk.format("POST", "/v1/attachments", {
    ["Authorization"] = "Bearer " .. args[2],
    ["Content-Type"] = "application/octet-stream",
  }, body)
  statuses = {}
  retry_after_missing = 0
end

function request()
  return request_bytes
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  if status == 503 then
    local found = false
    for name, _ in pairs(headers) do
      if string.lower(name) == "retry-after" then found = true end
    end
    if not found then retry_after_missing = retry_after_missing + 1 end
  end
end

function done(summary, latency, requests)
  local totals = {}
  local missing = 0
  for _, thread in ipairs(threads) do
    for status, count in pairs(thread:get("statuses")) do
      totals[status] = (totals[status] or 0) + count
    end
    missing = missing + thread:get("retry_after_missing")
  end
  local keys = {}
  for status, _ in pairs(totals) do table.insert(keys, status) end
  table.sort(keys)
  local parts = {}
  for _, status in ipairs(keys) do table.insert(parts, status .. ":" .. totals[status]) end
  local ok = totals[201] or 0
  local errors = summary.errors
  io.write(string.format(
    "RESULT responses=%d created=%d seconds=%.3f p50_ms=%.1f p99_ms=%.1f max_ms=%.1f " ..
    "statuses=%s retry_after_missing=%d connect_errors=%d read_errors=%d write_errors=%d timeouts=%d\n",
    summary.requests, ok, summary.duration / 1e6,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    (#parts > 0) and table.concat(parts, ",") or "none", missing,
    errors.connect, errors.read, errors.write, errors.timeout))
end
