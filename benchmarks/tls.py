"""What internal TLS costs: the same jobs on a local cluster without and with `security.ssl.internal.enabled`.

    python -m benchmarks.tls [--events 300000] [--repeat 2]

Mini-clusters of 1 TaskManager x 2 slots (one process per slot), plain (cluster-secret HMAC only)
and with internal TLS, in alternating rounds (mutual, PEM material of a throwaway CA made for the run, as the
operator provides it); each round runs map -> filter with the filter in the other slot (every record
crosses a TCP channel between two processes) and the keyed window at parallelism 2. Printed: events/s
end to end (best round) and in steady state for both, and the ratio TLS / plain (no assertion).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from strom.common.configuration import Configuration
from strom.runtime.minicluster import MiniCluster

from benchmarks.cluster import map_filter_graph, run, window_graph
from benchmarks.micro import filter_fn, loop_b, map_fn
from tests.engine.tls_material import CertificateAuthority, pem_tls_keys


def measure(conf: Configuration, n: int, repeat: int) -> dict[str, tuple[float, float, float | None]]:
    expected_filtered = sum(1 for i in range(n) if filter_fn(map_fn((i % 1000, i, 1))))
    with MiniCluster(conf, taskmanagers=1) as cluster:
        cluster.wait_for_taskmanagers(1)
        return {
            "map -> filter over a TCP channel (2 slots)": run(
                cluster, lambda d: map_filter_graph(n, d, across_slots=True), expected_filtered, repeat
            ),
            "key_by -> tumbling 1s -> sum, 2 slots": run(cluster, lambda d: window_graph(n, 2, d), loop_b(n), repeat),
        }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    n = args.events
    base: dict[str, Any] = {"taskmanager.numberOfTaskSlots": 2}
    with tempfile.TemporaryDirectory() as d:
        ca = CertificateAuthority("benchmark CA")
        crt, key = ca.issue("strom").write_pem(Path(d), "tls")
        tls_conf = {**base, **pem_tls_keys("internal", crt, key, ca.write_pem(Path(d)))}
        # alternate plain and TLS rounds, so that load from elsewhere on the machine hits both alike
        plain: dict[str, tuple[float, float, float | None]] = {}
        tls: dict[str, tuple[float, float, float | None]] = {}
        for _ in range(args.repeat):
            for conf, best in ((base, plain), (tls_conf, tls)):
                for name, result in measure(Configuration(conf), n, 1).items():
                    best[name] = min(best.get(name, result), result)
    print(f"events={n}, 1 TaskManager x 2 slots, best of {args.repeat}")
    print(f"{'job':<46}{'plain ev/s':>12}{'TLS ev/s':>12}{'TLS/plain':>11}{'steady plain':>14}{'steady TLS':>12}")
    for name in plain:
        (p_total, p_steady, _), (t_total, t_steady, _) = plain[name], tls[name]
        print(f"{name:<46}{n / p_total:>12,.0f}{n / t_total:>12,.0f}{p_total / t_total:>11.2f}"
              f"{n / p_steady:>14,.0f}{n / t_steady:>12,.0f}")
    print("(end to end: submission to FINISHED; steady: first to last record at the sinks)")


if __name__ == "__main__":
    main()
