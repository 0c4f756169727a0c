"""`strom-operator`: run the FlinkJob operator (kopf) with the handlers of strom_operator.handlers.

    strom-operator [--namespace NS]... | [--all-namespaces]
                   [--liveness URL|PORT] [--metrics-port PORT] [--log-level LEVEL]
                   [--jobmanager-url-map FILE] [--standalone]

Without --namespace or --all-namespaces it watches the namespace of its kubeconfig context's
default (kopf's rule). With --namespace (names, not patterns) kopf does not scan the cluster's
CRDs and namespaces, so a namespaced Role suffices. `--metrics-port 0` picks a free port and logs
it. The same handlers run with `kopf run -m strom_operator.handlers`; this command only turns flags
into kopf's arguments and the environment the handlers read (config.py).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time
from collections.abc import Sequence

from strom_operator.clients.jobmanager_endpoints import URL_MAP_ENV
from strom_operator.config import ALL_NAMESPACES, MAX_REQUEUE_ENV, METRICS_PORT_ENV, NAMESPACES_ENV

STARTUP_TIMEOUT_S = 30.0  # how long the operator tries to reach the API server before it gives up


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="strom-operator", description="The Strom FlinkJob operator (kopf).")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--namespace", "-n", action="append", default=[], metavar="NS",
                       help="watch this namespace (repeatable; kopf accepts glob patterns)")
    scope.add_argument("--all-namespaces", "-A", action="store_true", help="watch FlinkJobs in every namespace")
    p.add_argument("--liveness", metavar="URL|PORT",
                   help="kopf's liveness endpoint, e.g. http://0.0.0.0:8080/healthz (a bare port means that URL)")
    p.add_argument("--metrics-port", type=int, default=9090,
                   help="port of the operator's Prometheus metrics; 0 picks a free one, -1 disables (default 9090)")
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    p.add_argument("--jobmanager-url-map", metavar="FILE",
                   help="JSON file mapping 'namespace/service' to a JobManager REST URL (operator outside the "
                        "cluster)")
    p.add_argument("--max-requeue", type=float, metavar="SECONDS",
                   help="cap the delay between reconciliations of a FlinkJob")
    p.add_argument("--standalone", action="store_true", default=True,
                   help="no peering with other operators (the default: run one replica)")
    p.add_argument("--startup-timeout", type=float, default=STARTUP_TIMEOUT_S, metavar="SECONDS",
                   help="how long to try reaching the Kubernetes API at start before exiting with status 1 "
                        f"(default {STARTUP_TIMEOUT_S:g})")
    p.epilog = ("Exit status: 0 stopped (SIGTERM, SIGINT), 1 no credentials or the Kubernetes API unreachable for "
                "--startup-timeout (one line says which), 2 usage error.")
    return p.parse_args(argv)


async def api_problem(timeout_s: float) -> str | None:
    """Why the operator cannot work, in one line, or None: no credentials, or an API server that does not
    answer within `timeout_s` (retried meanwhile: a cluster may still be starting) or refuses them. Kopf
    would log each failure with its traceback and retry forever; a command run by hand should say it once."""
    import kopf

    from strom_operator.clients.kube_api import KubeApi, KubeApiError
    from strom_operator.handlers import obtain_credentials

    quiet = logging.getLogger("strom_operator.preflight")
    try:
        info = await asyncio.to_thread(obtain_credentials, settings=kopf.OperatorSettings(), logger=quiet)
    except kopf.LoginError as e:
        return f"{e}: set KUBECONFIG (or ~/.kube/config) or run in a pod with a service account"
    except OSError as e:  # KUBECONFIG naming a file that is not there (or not readable): kopf lets it through
        return f"cannot read the kubeconfig {e.filename}: {e.strerror}: check KUBECONFIG (or ~/.kube/config)"
    api = KubeApi.from_connection_info(info)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                await asyncio.wait_for(api.request("GET", "/version"), max(1.0, deadline - time.monotonic()))
                return None
            except KubeApiError as e:
                if e.status == 401:
                    return (f"the Kubernetes API at {api.server} refused the credentials (401 Unauthorized): "
                            "renew them or check KUBECONFIG's user")
                if e.status != 0:
                    return None  # it answers: what a missing permission means is reported by kopf later
                why = e.api_message.split(" ssl:")[0].split(" [")[0]  # not aiohttp's SSL context repr
            except TimeoutError:
                why = "no answer"
            if time.monotonic() >= deadline:
                return (f"cannot reach the Kubernetes API at {api.server} within {timeout_s:g} s ({why}): check "
                        "KUBECONFIG's cluster and that the cluster runs (--startup-timeout waits longer)")
            await asyncio.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
    finally:
        await api.close()


def liveness_url(value: str | None) -> str | None:
    if value is None:
        return None
    if value.isdigit():
        return f"http://0.0.0.0:{value}/healthz"
    return value


def export_scope(args: argparse.Namespace) -> None:
    """What is watched, for the handlers (config.py): kopf's cluster scanning follows from it."""
    if args.all_namespaces:
        os.environ[NAMESPACES_ENV] = ALL_NAMESPACES
    elif args.namespace:
        os.environ[NAMESPACES_ENV] = ",".join(args.namespace)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s",
                        stream=sys.stderr)
    os.environ[METRICS_PORT_ENV] = "off" if args.metrics_port < 0 else str(args.metrics_port)
    if args.jobmanager_url_map:
        os.environ[URL_MAP_ENV] = os.path.abspath(args.jobmanager_url_map)
    export_scope(args)
    if args.max_requeue is not None:
        os.environ[MAX_REQUEUE_ENV] = str(args.max_requeue)
    import kopf

    import strom_operator.handlers  # noqa: F401 - registers the handlers

    try:
        problem = asyncio.run(api_problem(args.startup_timeout))
    except KeyboardInterrupt:
        return 130
    if problem is not None:
        print(f"strom-operator: error: {problem}", file=sys.stderr)
        return 1
    try:
        asyncio.run(kopf.operator(
            standalone=args.standalone,
            clusterwide=args.all_namespaces,
            namespaces=args.namespace,
            liveness_endpoint=liveness_url(args.liveness),
        ))
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
