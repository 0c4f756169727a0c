"""metrics.reporter.prom.port takes Flink's port ranges: a JobManager and a TaskManager on one host
started with the same range (as the README's session cluster is) each bind a free port of it."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest
from strom.common import config_options as opts
from strom.common.config_options import ConfigError
from strom.common.configuration import Configuration
from strom.common.port_ranges import port_candidates
from strom.runtime.metrics.prometheus import start_exporter, stop_exporter
from strom.runtime.metrics.registry import MetricRegistry

from .cluster_testing import _env, wait_until


def test_port_lists_are_tried_in_the_order_written():
    assert list(port_candidates("9250-9252,9300")) == [9250, 9251, 9252, 9300]
    assert list(port_candidates(0)) == [0]
    assert Configuration().set(opts.PROM_PORT.key, " 9250 - 9252 ").get(opts.PROM_PORT) == "9250-9252"


@pytest.mark.parametrize("bad", ["abc", "9260-9250", "70000", "9250-", "9250,,9251", "-1", True])
def test_a_bad_port_list_is_refused_naming_the_key(bad):
    with pytest.raises(ConfigError, match="metrics.reporter.prom.port.*a range such as 9250-9260"):
        Configuration().set(opts.PROM_PORT.key, bad)


@contextmanager
def taken_ports(n: int) -> Iterator[list[int]]:
    """n consecutive loopback ports (the kernel picks the first), each held by a listening socket
    until the block ends; the caller closes the ones it wants free."""
    with ExitStack() as stack:
        for _ in range(50):
            first = socket.socket()
            first.bind(("127.0.0.1", 0))
            base = first.getsockname()[1]
            socks = [first]
            try:
                for p in range(base + 1, base + n):
                    s = socket.socket()
                    socks.append(s)
                    s.bind(("127.0.0.1", p))
            except OSError:
                for s in socks:
                    s.close()
                continue
            for s in socks:
                s.listen()
                stack.enter_context(s)
            yield socks  # type: ignore[misc]
            return
        raise RuntimeError("no block of consecutive free ports found")


def test_the_first_free_port_of_a_range_is_bound():
    with taken_ports(3) as socks:
        ports = [s.getsockname()[1] for s in socks]
        socks[2].close()  # only the last one is free
        bound = start_exporter(lambda: MetricRegistry().snapshot(), port=f"{ports[0]}-{ports[2]}")
        try:
            assert bound == ports[2]
            with urllib.request.urlopen(f"http://127.0.0.1:{bound}/metrics", timeout=10) as r:
                assert r.status == 200
        finally:
            stop_exporter(bound)


def test_a_range_without_a_free_port_names_the_range_and_the_key():
    with taken_ports(2) as socks:
        lo, hi = (s.getsockname()[1] for s in socks)
        with pytest.raises(OSError, match=rf"127\.0\.0\.1:{lo}-{hi} .*metrics\.reporter\.prom\.port.*in use"):
            start_exporter(lambda: MetricRegistry().snapshot(), port=f"{lo}-{hi}")


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


def test_jobmanager_and_taskmanager_on_one_host_share_a_range_without_errors():
    with taken_ports(4) as socks:
        ports = [s.getsockname()[1] for s in socks]
        for s in socks:
            s.close()  # a free block: the two processes bind its first two ports
        spec = f"{ports[0]}-{ports[-1]}"
        jm = subprocess.Popen(
            [sys.executable, "-m", "strom.cli", "jobmanager", "-D", "rest.port=0", "-D", "jobmanager.rpc.port=0",
             "-D", f"metrics.reporter.prom.port={spec}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), start_new_session=True,
        )
        tm = None
        try:
            line = jm.stdout.readline()  # type: ignore[union-attr]
            m = re.search(r"rpc port (\d+), rest port (\d+), metrics port (\d+)", line)
            assert m, line
            rpc_port, jm_metrics = int(m.group(1)), int(m.group(3))
            tm = subprocess.Popen(
                [sys.executable, "-m", "strom.cli", "taskmanager", "--jobmanager", f"127.0.0.1:{rpc_port}",
                 "-D", f"metrics.reporter.prom.port={spec}", "--log-level", "INFO"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env(), start_new_session=True,
            )
            seen: list[str] = []
            wait_until(lambda: seen.append(tm.stderr.readline()) or "Prometheus metrics of" in seen[-1],  # type: ignore[union-attr]
                       timeout=60, what="the TaskManager's exporter")
            tm_metrics = int(re.search(r":(\d+)/metrics", seen[-1]).group(1))  # type: ignore[union-attr]
            assert {jm_metrics, tm_metrics} <= set(ports) and jm_metrics != tm_metrics
            assert not [line for line in seen if " ERROR " in line], seen
            wait_until(lambda: "flink_jobmanager_numRegisteredTaskManagers 1.0" in scrape(jm_metrics), timeout=60,
                       what="the TaskManager registered")
            assert "flink_taskmanager_Status_TaskSlots_Total" in scrape(tm_metrics)
        finally:
            for p in (tm, jm):
                if p is not None:
                    p.terminate()
                    try:
                        p.wait(20)
                    except subprocess.TimeoutExpired:
                        p.kill()
                        p.wait(10)
