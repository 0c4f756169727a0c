"""Reading REST requests safely: bounded bodies, JSON with a depth limit, and a quiet log of bad requests.

Whatever a client sends, the answer is a 4xx naming what was wrong, never a 500: an unknown charset,
a body that does not decode, JSON nested deeper than any Flink message (the C parser would recurse
until RecursionError), a `Content-Encoding` whose bytes are not what it says. JSON bodies are small
(`MAX_JSON_BODY_BYTES`); job payloads have their own, larger limit (`rest.server.max-content-length`).

`MalformedRequestLog` writes each refused request once at WARNING, without a traceback, and at most
`burst` lines per `window_s`; the rest are counted and summarized, so a flood cannot flood the log.
"""

from __future__ import annotations

import codecs
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from strom.runtime.jobmanager.read_model import BadRequestError, RestHandlerError

# Flink's messages are flat objects; 1 MB is far more than any of them and small enough to parse on the loop.
MAX_JSON_BODY_BYTES = 1_048_576
MAX_JSON_DEPTH = 32


class PayloadTooLargeError(RestHandlerError):
    """A request body past its limit (413)."""

    status = 413


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
    """The request body (decompressed as its Content-Encoding says) up to `limit` bytes; 413 past it,
    400 when the body cannot be read (e.g. `Content-Encoding: gzip` over bytes that are not gzip)."""
    where = f"{request.method} {request.path}"
    if request.content_length is not None and request.content_length > limit:
        raise PayloadTooLargeError(f"Request body too large: {where} accepts at most {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.content.iter_chunked(65_536):
            size += len(chunk)
            if size > limit:
                raise PayloadTooLargeError(f"Request body too large: {where} accepts at most {limit} bytes")
            chunks.append(chunk)
    except RestHandlerError:
        raise
    except web.HTTPException:
        raise
    except Exception as e:  # noqa: BLE001 - aiohttp's decompression/transfer errors: the client's bytes
        encoding = request.headers.get("Content-Encoding")
        how = f" (Content-Encoding: {encoding})" if encoding else ""
        raise BadRequestError(f"Bad request: cannot read the body of {where}{how}: {type(e).__name__}") from None
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
