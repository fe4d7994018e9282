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

# A resumable creation that does not complete the upload (`Upload-Complete: ?0`, or
# `Upload-Incomplete: ?1` at interop 3) answers 201 with no body and no Content-Type, as every
# draft says; a complete one answers the plain upload's 201 with the JSON record. OpenAPI gives
# one status one response object, so `upload`'s 201 lists the record's media type and says in
# its description that the incomplete creation has no body. These two checks are the built-in
# ones, except that they accept exactly that answer: 201 to `upload`, incompleteness echoed,
# empty body, no Content-Type. Anything else is judged by the built-in check.
from schemathesis.specs.openapi import checks as _openapi_checks


def _incomplete_creation(response, case):
    headers = {name.lower(): values for name, values in response.headers.items()}

    def field(name):
        values = headers.get(name.lower()) or []
        return values[0] if isinstance(values, list) and values else values or None

    return (
        case.operation.definition.raw.get("operationId") == "upload"
        and response.status_code == 201
        and not response.content
        and field("Content-Type") is None
        and (field("Upload-Complete") == "?0" or field("Upload-Incomplete") == "?1")
    )


@schemathesis.check
def documented_content_type(ctx, response, case):
    if _incomplete_creation(response, case):
        return None
    return _openapi_checks.content_type_conformance(ctx, response, case)


@schemathesis.check
def documented_response_schema(ctx, response, case):
    if _incomplete_creation(response, case):
        return None
    return _openapi_checks.response_schema_conformance(ctx, response, case)
