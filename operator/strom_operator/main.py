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
from collections.abc import Sequence

from strom_operator.config import ALL_NAMESPACES, MAX_REQUEUE_ENV, METRICS_PORT_ENV, NAMESPACES_ENV
from strom_operator.endpoints import URL_MAP_ENV


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
    return p.parse_args(argv)


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
