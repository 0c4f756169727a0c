"""The web dashboard's files, served by the REST endpoint at `/` (Flink's Web UI on the REST port).

The page lives in the `strom.web` package: plain ES modules, a stylesheet and a vendored dagre (the
DAG layout), no build step and no CDN, so a wheel carries everything and the page works offline. It
reads only the public REST API from the same origin. A request names one of the shipped files; no
path is ever joined from the request, so nothing outside `strom.web` is reachable.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable

from aiohttp import web

from strom.common import config_options as opts

# Not REST operations: the OpenAPI description leaves them out (tests compare it with the route table).
DASHBOARD_ROUTES = frozenset({("GET", "/"), ("GET", "/web/{name}")})
_CONTENT_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".txt": "text/plain"}
# The page builds its DOM with textContent (job names and stack traces are data, never markup); the policy
# makes that a rule the browser enforces: only this origin's scripts, styles and connections.
_SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    # an upgraded JobManager serves new files under the same names: revalidate every time (ETag: a 304)
    "Cache-Control": "no-cache",
}


@dataclass(frozen=True, slots=True)
class DashboardFile:
    body: bytes
    etag: str  # the content's hash, quoted as HTTP wants it


FILES_KEY: web.AppKey[dict[str, DashboardFile]] = web.AppKey("dashboard files")


@dataclass(frozen=True, slots=True)
class DashboardSettings:
    """What GET /config tells the page: its polling period and which actions it may offer."""

    refresh_interval_ms: int
    submit_enabled: bool
    cancel_enabled: bool


def dashboard_settings(config: Mapping[str, str], *, submit_enabled: bool) -> DashboardSettings:
    """The dashboard's `web.*` settings from the cluster configuration (a bad value: one line naming the key)."""

    def read(option: opts.ConfigOption[opts.T]) -> opts.T:
        return option.parse(config[option.key]) if option.key in config else option.default

    return DashboardSettings(read(opts.WEB_REFRESH_INTERVAL), submit_enabled, read(opts.WEB_CANCEL_ENABLE))


def _walk(folder: Traversable, prefix: str = "") -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for entry in folder.iterdir():
        name = prefix + entry.name
        if entry.is_dir():
            if entry.name != "__pycache__":
                files.update(_walk(entry, name + "/"))
        elif any(name.endswith(suffix) for suffix in _CONTENT_TYPES):
            files[name] = entry.read_bytes()
    return files


def dashboard_files() -> dict[str, bytes]:
    """Every servable file of the `strom.web` package by its path inside it ("vendor/dagre.esm.js")."""
    return _walk(resources.files("strom.web"))


def _file_response(request: web.Request, name: str) -> web.Response:
    file = request.app[FILES_KEY].get(name)
    if file is None:
        raise web.HTTPNotFound()
    headers = {**_SECURITY_HEADERS, "ETag": file.etag}
    if file.etag in request.headers.get("If-None-Match", ""):
        return web.Response(status=304, headers=headers)
    content_type = _CONTENT_TYPES[name[name.rindex(".") :]]
    response = web.Response(body=file.body, content_type=content_type, charset="utf-8", headers=headers)
    response.enable_compression()  # gzip when the browser accepts it: dagre is 49 KB, 17 KB gzipped
    return response


async def index(request: web.Request) -> web.Response:
    return _file_response(request, "index.html")


async def asset(request: web.Request) -> web.Response:
    return _file_response(request, request.match_info["name"])


def add_dashboard_routes(app: web.Application) -> None:
    """Serve the dashboard: `/` is its page, `/web/<file>` its scripts and stylesheet."""
    app[FILES_KEY] = {
        name: DashboardFile(body, f'"{hashlib.sha256(body).hexdigest()[:32]}"')
        for name, body in dashboard_files().items()
    }
    app.router.add_get("/", index)
    app.router.add_get("/web/{name:[A-Za-z0-9_./-]+}", asset)
