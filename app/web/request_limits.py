"""What one request may cost the server before any callback runs, and the one line it gets when
it asks for more.

A callback's body is JSON, and JSON parsed into Python objects can grow twenty-fold: 80 MB of
`{},` is 28 million dicts, ~1 GB; a few such requests at once held 4 GB of a server's memory
for good. So a body is refused past MAX_REQUEST_BYTES before it is read (the largest model
upload, as base64 inside a callback), only LARGE_BODIES_AT_ONCE bodies past LARGE_BODY_BYTES are
taken in at once, and a body is parsed only if it holds at most MAX_JSON_VALUES values (an
upload's bytes are one string, one value). A request that fails on something else is one line
in the log and in the answer, not a traceback.
"""

from __future__ import annotations

import sys
import threading

from flask import Flask, Response, request
from flask.json.provider import DefaultJSONProvider
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge, ServiceUnavailable

from tilescope.app.workbench.model_access import MAX_SOURCE_BYTES
from tilescope.app.web.error_lines import error_line, first_line

MAX_REQUEST_BYTES = MAX_SOURCE_BYTES * 4 // 3 + (1 << 20)
LARGE_BODY_BYTES = 1 << 20  # a re-run with 100,000 pending overrides sends ~4 MB; page clicks send KBs
LARGE_BODIES_AT_ONCE = 2  # per server process
MAX_JSON_VALUES = 1_000_000  # objects, arrays and items past the first of each: ~100 MB parsed at most
_HOLDS_LARGE = "tilescope.holds_large_body"  # in the request's WSGI environ: its own, whatever contexts share


class BoundedJSON(DefaultJSONProvider):
    """Flask's JSON, refusing a document of more than MAX_JSON_VALUES values before parsing it."""

    def loads(self, s: str | bytes, **kwargs):
        # counted, not parsed: a comma, brace or bracket in a string counts too, so this
        # over-counts, never under-counts
        values = sum(s.count(c) for c in ((b",", b"{", b"[") if isinstance(s, bytes) else (",", "{", "[")))
        if values > MAX_JSON_VALUES:
            raise RequestEntityTooLarge(f"the request holds over {MAX_JSON_VALUES:,} JSON values")
        return super().loads(s, **kwargs)


def limit_requests(server: Flask) -> None:
    """Bound every request `server` takes, as the module says."""
    server.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BYTES  # Werkzeug refuses past it, unread
    server.json = BoundedJSON(server)
    large = threading.BoundedSemaphore(LARGE_BODIES_AT_ONCE)

    @server.before_request
    def admit_large_bodies_one_by_one():
        # from the headers alone: the body is read later, if ever; a chunked one may be of any size
        chunked = request.content_length is None and "Transfer-Encoding" in request.headers
        if chunked or (request.content_length or 0) > LARGE_BODY_BYTES:
            if not large.acquire(blocking=False):  # waiting would hold one of the worker's threads
                raise ServiceUnavailable(
                    f"this server is taking in {LARGE_BODIES_AT_ONCE} large requests already; try again in a moment"
                )
            request.environ[_HOLDS_LARGE] = True

    @server.teardown_request
    def release(_error: BaseException | None) -> None:
        if request.environ.pop(_HOLDS_LARGE, False):
            large.release()

    @server.errorhandler(Exception)
    def one_line(error: Exception) -> Response:
        if isinstance(error, HTTPException):  # its own status and headers, with one line for a body
            line, response = first_line(str(error.description or error.name), "bad request"), error.get_response()
        else:  # a malformed body Dash did not expect, nested past the recursion limit, ...
            line, response = error_line(error), Response(status=400)
        if response.status_code != 404:
            sys.stderr.write(f"tilescope: refused {request.method} {request.path[:100]}: {line}\n")  # one write
        response.set_data(f"tilescope: {line}\n")
        response.content_type = "text/plain; charset=utf-8"
        return response
