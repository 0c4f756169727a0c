"""Issue 16 item 12: `strom-operator` without a cluster says why in one line and exits 1 after a bounded
time, instead of kopf's traceback retried every 60 s forever."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

STARTUP_TIMEOUT_S = 2.0
# the import and credential loading before the deadline starts, on a loaded 2-core machine
STARTUP_SLACK_S = 30.0


def _operator(env: dict[str, str], *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "strom_operator.main", "--metrics-port", "-1", *args],
                            env=env, capture_output=True, text=True, timeout=120)
    return result, time.monotonic() - started


def _without_cluster(tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBERNETES_", "KUBECONFIG"))}
    env["HOME"] = str(tmp_path)  # no ~/.kube/config either
    return env


def test_without_credentials_the_operator_exits_1_with_one_line(tmp_path):
    result, _ = _operator(_without_cluster(tmp_path))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "strom-operator: error: no Kubernetes credentials: neither a service account nor a kubeconfig: "
        "set KUBECONFIG (or ~/.kube/config) or run in a pod with a service account"
    ], result.stderr


def test_an_unreachable_api_server_ends_the_operator_after_the_startup_timeout_with_one_line(tmp_path):
    with socket.socket() as s:  # a port nothing listens on (bound, not listening: refused)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        kubeconfig = tmp_path / "config"
        kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
            f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{port}'}}}}]\n"
            "users: [{name: u, user: {token: t}}]\n"
            "contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]\n"
        )
        env = dict(_without_cluster(tmp_path), KUBECONFIG=str(kubeconfig))
        result, took = _operator(env, "--namespace", "default", "--startup-timeout", str(STARTUP_TIMEOUT_S))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith(f"strom-operator: error: cannot reach the Kubernetes API at https://127.0.0.1:{port} "
                               f"within {STARTUP_TIMEOUT_S:g} s"), lines[0]
    assert "KUBECONFIG" in lines[0]
    assert STARTUP_TIMEOUT_S <= took < STARTUP_TIMEOUT_S + STARTUP_SLACK_S


def test_a_kubeconfig_file_that_is_not_there_is_named_in_one_line(tmp_path):
    missing = tmp_path / "no-such-kubeconfig"
    result, _ = _operator(dict(_without_cluster(tmp_path), KUBECONFIG=str(missing)), "--namespace", "default")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"strom-operator: error: cannot read the kubeconfig {missing}: No such file or directory: "
        "check KUBECONFIG (or ~/.kube/config)"
    ], result.stderr
