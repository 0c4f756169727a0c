"""A tiny API server whose tokens expire, for the credential-refresh tests of the operator's KubeApi.

It serves `GET .../configmaps/<name>` (an empty ConfigMap) to a request whose bearer token is valid
and answers 401 Unauthorized otherwise, as a real API server does with an expired token. Valid
tokens are the ones a test hands out: minted by an exec plugin (`exec_kubeconfig`: each run of the
plugin appends a new token to a file, as EKS's or GKE's plugins fetch a new one) or written to a
projected-token file; each token is accepted for `uses` requests, then it has expired.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import yaml
from aiohttp import web


class TokenServer:
    """`valid()` lists the tokens in force (read at each request); `uses` requests each."""

    def __init__(self, valid: Callable[[], list[str]], *, uses: int) -> None:
        self.valid = valid
        self.uses = uses
        self.used: Counter[str] = Counter()
        self.answers: list[tuple[str, int]] = []  # (token, HTTP status) per request, in order
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def _serve(self, request: web.Request) -> web.Response:
        header = request.headers.get("Authorization", "")
        token = header[len("Bearer "):] if header.startswith("Bearer ") else ""
        if token in self.valid() and self.used[token] < self.uses:
            self.used[token] += 1
            self.answers.append((token, 200))
            name = request.match_info["name"]
            return web.json_response({"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": name, "namespace": request.match_info["ns"]}})
        self.answers.append((token, 401))
        return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                  "message": "Unauthorized", "reason": "Unauthorized", "code": 401}, status=401)

    async def start(self) -> TokenServer:
        app = web.Application()
        app.router.add_get("/api/v1/namespaces/{ns}/configmaps/{name}", self._serve)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


def minted_tokens(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def exec_kubeconfig(work: Path, server: str) -> tuple[Path, Path]:
    """A kubeconfig whose user runs an exec plugin minting a new token per run; (kubeconfig, minted file)."""
    minted = work / "minted.txt"
    plugin = work / "mint_token.py"
    plugin.write_text(textwrap.dedent(f"""\
        import json, sys
        with open({str(minted)!r}, "a+") as f:
            f.seek(0)
            n = len(f.read().split()) + 1
            f.write(f"tok-{{n}}\\n")
        json.dump({{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                   "status": {{"token": f"tok-{{n}}"}}}}, sys.stdout)
        """))
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "short",
        "clusters": [{"name": "short", "cluster": {"server": server}}],
        "users": [{"name": "short", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
            "args": [str(plugin)], "interactiveMode": "Never"}}}],
        "contexts": [{"name": "short", "context": {"cluster": "short", "user": "short", "namespace": "default"}}],
    }
    kubeconfig = work / "kubeconfig.yaml"
    kubeconfig.write_text(yaml.safe_dump(config))
    return kubeconfig, minted


def describe(server: TokenServer) -> str:
    return json.dumps(server.answers)
