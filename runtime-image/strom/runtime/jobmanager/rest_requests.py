"""Reading REST requests safely: bounded bodies, JSON with a depth limit, and a quiet log of bad requests.

Whatever a client sends, the answer is a 4xx naming what was wrong, never a 500: an unknown charset,
a body that does not decode, JSON nested deeper than any Flink message (the C parser would recurse
until RecursionError), a `Content-Encoding` whose bytes are not what it says. JSON bodies are small
(`MAX_JSON_BODY_BYTES`); job payloads have their own, larger limit (`rest.server.max-content-length`).

Bodies are decompressed here, not by aiohttp (the server runs with `auto_decompress=False`, see
`RUNNER_OPTIONS`): aiohttp's own decoder fails inside its protocol layer, where it answers in plain
text and logs an ERROR with a traceback per request. Here `gzip` and `deflate` are decoded with the
body's size limit applied to the decompressed bytes (a small bomb cannot inflate past it); any other
coding is 415.

`MalformedRequestLog` writes each refused request once at WARNING, without a traceback, and at most
`burst` lines per `window_s`; the rest are counted and summarized, so a flood cannot flood the log.
"""

from __future__ import annotations

import codecs
import json
import logging
import time
import zlib
from collections.abc import Callable
from typing import Any

from aiohttp import web

from strom.runtime.jobmanager.read_model import BadRequestError, RestHandlerError

# Flink's messages are flat objects; 1 MB is far more than any of them and small enough to parse on the loop.
MAX_JSON_BODY_BYTES = 1_048_576
MAX_JSON_DEPTH = 32


# aiohttp's server options the readers below rely on: they decode Content-Encoding themselves; a body
# refused unread is drained for at most 1 s (aiohttp's default 10 s lets a client hold a handler open).
RUNNER_OPTIONS: dict[str, Any] = {"access_log": None, "auto_decompress": False, "lingering_time": 1.0}
_CODINGS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class PayloadTooLargeError(RestHandlerError):
    """A request body past its limit (413)."""

    status = 413


class UnsupportedEncodingError(RestHandlerError):
    """A Content-Encoding this endpoint does not decode (415)."""

    status = 415


def content_decoder(header: str | None, where: str) -> zlib._Decompress | None:
    """The decompressor for a Content-Encoding header value; None for none/identity; 415 otherwise."""
    codings = [c.strip().lower() for c in (header or "").split(",") if c.strip() and c.strip().lower() != "identity"]
    if not codings:
        return None
    if len(codings) > 1 or codings[0] not in _CODINGS:
        shown = (header or "")[:100]
        raise UnsupportedEncodingError(
            f"Unsupported Content-Encoding {shown!r} on {where}: send the body as gzip, deflate or identity"
        )
    return zlib.decompressobj(_CODINGS[codings[0]])


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """True when `value` nests lists/objects deeper than `limit` (iterative: no recursion to exhaust)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def parse_json_object(
    raw: bytes, charset: str | None, *, where: str, max_depth: int = MAX_JSON_DEPTH
) -> dict[str, Any]:
    """The JSON object in `raw` (encoded in `charset`, default UTF-8); `BadRequestError` naming `where`
    (e.g. 'POST /savepoint-disposal') and what is wrong otherwise. Pure: no I/O."""
    encoding = charset or "utf-8"
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise BadRequestError(
            f"Bad request: unknown charset {encoding!r} in the Content-Type of {where}: send JSON as UTF-8"
        ) from None
    try:
        text = raw.decode(encoding)
    except (UnicodeDecodeError, LookupError, ValueError):
        raise BadRequestError(f"Bad request: the body of {where} is not valid {encoding} text") from None
    try:
        body = json.loads(text)
    except RecursionError:
        raise BadRequestError(f"Bad request: the JSON body of {where} nests deeper than {max_depth} levels") from None
    except ValueError as e:
        raise BadRequestError(f"Bad request: the body of {where} is not JSON ({e})") from None
    if not isinstance(body, dict):
        raise BadRequestError(f"Bad request: the body of {where} must be a JSON object")
    if json_depth_exceeds(body, max_depth):
        raise BadRequestError(f"Bad request: the JSON body of {where} nests deeper than {max_depth} levels")
    return body


async def read_body(request: web.Request, limit: int) -> bytes:
    """The request body, decoded as its Content-Encoding says, up to `limit` decoded bytes; 413 past
    it, 400 when the bytes are not what the encoding says (e.g. `gzip` over bytes that are not gzip)."""
    where = f"{request.method} {request.path}"
    too_large = f"Request body too large: {where} accepts at most {limit} bytes"
    encoding = request.headers.get("Content-Encoding")
    decoder = content_decoder(encoding, where)
    if decoder is None and request.content_length is not None and request.content_length > limit:
        raise PayloadTooLargeError(too_large)
    chunks: list[bytes] = []
    size = 0
    try:
        async for raw in request.content.iter_chunked(65_536):
            chunk = raw if decoder is None else decoder.decompress(raw, limit + 1 - size)
            size += len(chunk)
            if size > limit or (decoder is not None and decoder.unconsumed_tail):
                raise PayloadTooLargeError(too_large)
            chunks.append(chunk)
        if decoder is not None:
            tail = decoder.flush()
            size += len(tail)
            if size > limit:
                raise PayloadTooLargeError(too_large)
            chunks.append(tail)
            if not decoder.eof:
                raise zlib.error("the compressed stream ends early")
    except RestHandlerError:
        raise
    except zlib.error:
        raise BadRequestError(f"Bad request: the body of {where} is not valid {encoding} data") from None
    except Exception as e:  # noqa: BLE001 - aiohttp's transfer errors (e.g. a broken chunked body): the client's
        raise BadRequestError(f"Bad request: cannot read the body of {where}: {type(e).__name__}") from None
    return b"".join(chunks)


async def read_json_object(request: web.Request, limit: int = MAX_JSON_BODY_BYTES) -> dict[str, Any]:
    """The request's JSON object body; {} without a body (Flink's optional request bodies)."""
    if not request.can_read_body:
        return {}
    raw = await read_body(request, limit)
    if not raw.strip():
        return {}
    return parse_json_object(raw, request.charset, where=f"{request.method} {request.path}")


class MalformedRequestLog:
    """Refused requests at WARNING, one line each without traceback, at most `burst` per `window_s`."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        burst: int = 10,
        window_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = logger
        self._burst = burst
        self._window_s = window_s
        self._clock = clock
        self._window_start = float("-inf")
        self._written = 0
        self._suppressed = 0

    def refused(self, method: str, path: str, status: int, message: str) -> None:
        now = self._clock()
        if now - self._window_start >= self._window_s:
            if self._suppressed:
                self._log.warning("%d more refused REST requests were not logged", self._suppressed)
            self._window_start, self._written, self._suppressed = now, 0, 0
        if self._written >= self._burst:
            self._suppressed += 1
            return
        self._written += 1
        self._log.warning("Refused REST request %s %s (%d): %s", method, path[:200], status, message[:500])
