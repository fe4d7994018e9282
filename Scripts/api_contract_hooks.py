# Loaded by schemathesis in Scripts/api-contract (SCHEMATHESIS_HOOKS=api_contract_hooks).
#
# Python's http.client takes any 1xx answer but 100 for the final one, which RFC 9110 §15.2
# forbids a client to do: a resumable creation's `104 Upload Resumption Supported` (and the
# progress 104s) would be judged as the answer, and the real one left unread. Interim answers
# are skipped here, as a conforming client skips them.
#
# The upload media types (`application/partial-upload`, `application/offset+octet-stream`) are
# raw bytes on the wire, like `application/octet-stream`.
import http.client

import schemathesis

_read_status = http.client.HTTPResponse._read_status


def _read_final_status(self):
    while True:
        version, status, reason = _read_status(self)
        if not 100 <= status < 200 or status == 101:
            return version, status, reason
        http.client._read_headers(self.fp)


http.client.HTTPResponse._read_status = _read_final_status
schemathesis.serializer.alias(
    ["application/partial-upload", "application/offset+octet-stream"], "application/octet-stream"
)
