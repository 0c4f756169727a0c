"""Short-lived credentials: the operator's KubeApi keeps working when its tokens expire.

Against token_server.py, whose tokens are accepted for a few requests only: an exec plugin that mints
a new token per run (EKS/GKE style), logged in through the operator's own login
(handlers.obtain_credentials, the kubernetes client's loaders) and re-logged-in on 401; and a
projected ServiceAccount token file that the kubelet rotates, re-read when it changes.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import kopf
import kubernetes.config.kube_config
import pytest
from strom_operator.clients.kube_api import KubeApi, KubeApiError
from strom_operator.handlers import obtain_credentials, relogin_with

from tests.operator.token_server import TokenServer, describe, exec_kubeconfig, minted_tokens

LOG = logging.getLogger("test")


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_exec_plugin_tokens_that_expire_every_three_requests_are_renewed_by_a_relogin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> tuple[TokenServer, list[str]]:
        minted: list[Path] = []
        server = await TokenServer(lambda: minted_tokens(minted[0]), uses=3).start()
        kubeconfig, minted_file = exec_kubeconfig(tmp_path, server.url)
        minted.append(minted_file)
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        # The kubernetes client reads $KUBECONFIG once, when imported (the operator's process has it from the start).
        monkeypatch.setattr(kubernetes.config.kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(kubeconfig))
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        settings = kopf.OperatorSettings()
        info = await asyncio.to_thread(obtain_credentials, settings=settings, logger=LOG)
        kube = KubeApi.from_connection_info(info, relogin=relogin_with(settings, LOG))
        try:
            names = [(await kube.get("ConfigMap", "default", f"cm-{i}"))["metadata"]["name"] for i in range(10)]
        finally:
            await kube.close()
            await server.stop()
        return server, names

    server, names = _run(scenario())
    assert names == [f"cm-{i}" for i in range(10)], describe(server)
    # 10 requests at 3 per token: tok-1..tok-4, each renewal after exactly one refused request.
    assert sorted(server.used) == ["tok-1", "tok-2", "tok-3", "tok-4"], describe(server)
    refused = [token for token, status in server.answers if status == 401]
    assert refused == ["tok-1", "tok-2", "tok-3"], describe(server)


def test_a_rotated_projected_token_file_is_read_again_before_the_old_token_is_refused(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("projected-1\n")

    async def scenario() -> tuple[TokenServer, list[str]]:
        # Only the file's current token is valid: the old one is refused as soon as it rotated.
        server = await TokenServer(lambda: [token_file.read_text().strip()], uses=1000).start()
        kube = KubeApi(server.url, token_file=str(token_file))
        got = []
        try:
            for i in range(6):
                if i in (2, 4):  # the kubelet swaps the file's content
                    token_file.write_text(f"projected-{i}\n")
                got.append((await kube.get("ConfigMap", "default", f"cm-{i}"))["metadata"]["name"])
        finally:
            await kube.close()
            await server.stop()
        return server, got

    server, got = _run(scenario())
    assert got == [f"cm-{i}" for i in range(6)]
    assert [s for _, s in server.answers] == [200] * 6, describe(server)  # never a 401
    assert [t for t, _ in server.answers] == ["projected-1"] * 2 + ["projected-2"] * 2 + ["projected-4"] * 2


def test_concurrent_requests_refused_together_share_one_relogin(tmp_path: Path) -> None:
    tokens = ["t0"]
    logins = []

    async def relogin() -> Any:
        logins.append(1)
        await asyncio.sleep(0)  # let the other refused requests queue up on the login lock
        tokens.append(f"t{len(tokens)}")
        return kopf.ConnectionInfo(server=server.url, token=tokens[-1])

    async def scenario() -> list[str]:
        nonlocal server
        server = await TokenServer(lambda: tokens[-1:], uses=1000).start()
        kube = KubeApi(server.url, headers={"Authorization": "Bearer expired"}, relogin=relogin)
        try:
            bodies = await asyncio.gather(*(kube.get("ConfigMap", "default", f"cm-{i}") for i in range(5)))
        finally:
            await kube.close()
            await server.stop()
        return [b["metadata"]["name"] for b in bodies]

    server: Any = None
    assert _run(scenario()) == [f"cm-{i}" for i in range(5)]
    assert len(logins) == 1


def test_a_failed_relogin_leaves_the_401_to_the_caller(tmp_path: Path) -> None:
    async def relogin() -> Any:
        raise kopf.LoginError("the exec plugin exited with 1")

    async def scenario() -> KubeApiError:
        server = await TokenServer(lambda: [], uses=1).start()
        kube = KubeApi(server.url, headers={"Authorization": "Bearer expired"}, relogin=relogin)
        try:
            with pytest.raises(KubeApiError) as raised:
                await kube.get("ConfigMap", "default", "cm")
        finally:
            await kube.close()
            await server.stop()
        return raised.value

    error = _run(scenario())
    assert (error.status, error.reason) == (401, "Unauthorized")
