"""Flink's address keys: what processes bind and advertise, and the one-line errors for wrong addresses.

Unit level (options, bind-address defaults, the advertised host derived from the route to a
loopback JobManager, the registration retry policy on a fake clock, the JobManager's reachability
check) and real processes for bad input: a TaskManager whose JobManager is unreachable, one that
advertises an address the JobManager cannot reach back, bind addresses that are not this host's.
Addresses used: loopback only (127.0.0.0/8 is all local on Linux), and 198.19.255.254 of the test
block as an address this host never has (test networks give the machine only .1 of a /24).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from strom.common import config_options as opts
from strom.common.config_options import ConfigError
from strom.common.configuration import Configuration
from strom.runtime.network.addresses import (
    BindAddressError,
    advertised_address_problem,
    check_bindable,
    data_bind,
    format_duration,
    metrics_bind,
    reachability_problem,
    rest_bind,
    route_source_address,
    rpc_bind,
)
from strom.runtime.network.data_server import DataServer
from strom.runtime.taskmanager.registration import (
    WARN_INTERVAL_S,
    JobManagerAddress,
    RegistrationAttempts,
    RegistrationError,
)
from strom.runtime.taskmanager.taskmanager import TaskManager

from tests.engine.cluster_testing import SessionCluster, _env

NOT_THIS_HOST = "198.19.255.254"


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def strom(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in _env().items() if k != "STROM_CONF_DIR"}
    return subprocess.run(
        [sys.executable, "-m", "strom.cli", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("strom: error:")]


# -- options ---------------------------------------------------------------------------------------
def test_address_keys_have_flinks_names_and_defaults():
    conf = Configuration()
    assert conf.get(opts.RPC_ADDRESS) == "127.0.0.1"
    assert conf.get(opts.REST_ADDRESS) == "127.0.0.1"
    for unset in (opts.JOBMANAGER_BIND_HOST, opts.REST_BIND_ADDRESS, opts.TASKMANAGER_HOST,
                  opts.TASKMANAGER_BIND_HOST, opts.METRICS_HOST):
        assert conf.get(unset) == "", unset.key
    assert conf.get(opts.REGISTRATION_TIMEOUT) == 5 * 60_000
    assert conf.get(opts.DATA_PORT) == 0


def test_registration_timeout_parses_durations_and_names_the_key_when_wrong():
    assert Configuration({"taskmanager.registration.timeout": "2 s"}).get(opts.REGISTRATION_TIMEOUT) == 2000
    with pytest.raises(ConfigError, match="taskmanager.registration.timeout"):
        Configuration({"taskmanager.registration.timeout": "soon"})


def test_unset_bind_addresses_default_to_the_addresses_others_use():
    conf = Configuration({"jobmanager.rpc.address": "jm", "rest.address": "rest-jm"})
    assert rpc_bind(conf).host == "jm"
    assert rpc_bind(conf).describe() == "jobmanager.bind-host is unset, so jobmanager.rpc.address"
    assert rest_bind(conf).host == "rest-jm"
    assert metrics_bind(conf, rpc_bind(conf)).host == "jm"
    conf = Configuration({"jobmanager.bind-host": "0.0.0.0", "rest.bind-address": "0.0.0.0",
                          "metrics.reporter.prom.host": "127.0.0.1"})
    assert (rpc_bind(conf).host, rest_bind(conf).host) == ("0.0.0.0", "0.0.0.0")
    assert rpc_bind(conf).describe() == "jobmanager.bind-host"
    assert metrics_bind(conf, rpc_bind(conf)).host == "127.0.0.1"


def test_taskmanager_data_servers_bind_the_advertised_host_unless_bind_host_is_set():
    assert data_bind(Configuration(), "198.18.1.3").host == "198.18.1.3"
    assert data_bind(Configuration({"taskmanager.host": "198.18.1.3"}), "198.18.1.3").describe() == (
        "taskmanager.bind-host is unset, so taskmanager.host"
    )
    bound = data_bind(Configuration({"taskmanager.bind-host": "0.0.0.0"}), "198.18.1.3")
    assert (bound.host, bound.key) == ("0.0.0.0", "taskmanager.bind-host")
    assert metrics_bind(Configuration(), bound).host == "0.0.0.0"


def test_durations_print_as_a_person_writes_them():
    assert [format_duration(ms) for ms in (300_000, 2000, 1500, 250)] == ["5 min", "2 s", "1.5 s", "250 ms"]


# -- the advertised host ---------------------------------------------------------------------------
@pytest.mark.parametrize("jobmanager", ["127.0.0.1", "localhost"])
def test_route_to_a_loopback_jobmanager_starts_at_loopback(jobmanager):
    assert route_source_address(jobmanager, 6123) == "127.0.0.1"


def test_taskmanager_without_taskmanager_host_advertises_its_route_to_the_jobmanager():
    tm = TaskManager(Configuration(), jobmanager=("127.0.0.1", free_port()))
    tm.resolve_addresses(RegistrationAttempts(tm.jobmanager, 1000))
    assert tm.host == "127.0.0.1"
    assert tm.bind is not None and tm.bind.host == "127.0.0.1"


def test_taskmanager_host_is_advertised_as_set_and_bind_host_is_bound():
    conf = Configuration({"taskmanager.host": "127.0.0.2", "taskmanager.bind-host": "0.0.0.0"})
    tm = TaskManager(conf, jobmanager=("127.0.0.1", free_port()))
    tm.resolve_addresses(RegistrationAttempts(tm.jobmanager, 1000))
    assert (tm.host, tm.bind.host if tm.bind else None) == ("127.0.0.2", "0.0.0.0")


# -- registration policy ---------------------------------------------------------------------------
class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_registration_warns_every_ten_seconds_then_gives_up_with_one_line():
    clock = FakeClock()
    address = JobManagerAddress("jm", 6123, key="jobmanager.rpc.address")
    attempts = RegistrationAttempts(address, 60_000, clock=clock)
    refused = ConnectionRefusedError(111, "Connection refused")
    first = attempts.failed(refused)
    assert first.warning is not None and "jm:6123 (jobmanager.rpc.address): connection refused" in first.warning
    clock.now += WARN_INTERVAL_S / 2
    assert attempts.failed(refused).warning is None
    clock.now += WARN_INTERVAL_S / 2
    assert attempts.failed(refused).warning is not None
    clock.now += 60
    with pytest.raises(RegistrationError) as e:
        attempts.failed(socket.gaierror(-2, "Name or service not known"))
    assert str(e.value) == (
        "TaskManager could not register at JobManager jm:6123 (jobmanager.rpc.address) within 1 min: the name "
        "does not resolve (Name or service not known); check that the JobManager runs and that the address is "
        "reachable from this host"
    )


def test_registration_never_waits_past_its_deadline():
    """Backoff 0.1, 0.2, 0.4 s, then the 0.3 s left of 1 s; the next failure gives up."""
    clock = FakeClock()
    attempts = RegistrationAttempts(JobManagerAddress("jm", 1, key="--jobmanager"), 1000, clock=clock)
    waits = []
    with pytest.raises(RegistrationError, match="within 1 s: no route to host"):
        while len(waits) < 10:
            waits.append(attempts.failed(OSError(113, "No route to host")).wait_s)
            clock.now += waits[-1]
    assert waits == pytest.approx([0.1, 0.2, 0.4, 0.3])


# -- the JobManager's reachability check -----------------------------------------------------------
@pytest.mark.parametrize(
    ("advertised", "peer", "problem"),
    [
        ("127.0.0.1", "198.18.1.3", "a loopback address, while the TaskManager connects from 198.18.1.3"),
        ("127.0.0.1", "::ffff:198.18.1.3", "a loopback address, while the TaskManager connects from ::ffff:198.18.1.3"),
        ("0.0.0.0", "198.18.1.3", "an address to bind, not one to connect to"),
        ("127.0.0.1", "127.0.0.1", None),
        ("198.18.1.3", "198.18.1.3", None),
        ("198.18.1.3", "198.18.1.1", None),  # behind NAT or a proxy: the probe decides
    ],
)
def test_advertised_address_problem(advertised, peer, problem):
    assert advertised_address_problem(advertised, peer) == problem


def test_reachability_check_connects_to_the_advertised_port():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert asyncio.run(reachability_problem("tm-a", "127.0.0.1", port, "127.0.0.1")) is None
    closed = free_port()
    assert asyncio.run(reachability_problem("tm-a", "127.0.0.1", closed, "127.0.0.1")) == (
        f"TaskManager tm-a advertises 127.0.0.1:{closed} but the JobManager cannot reach it (connection refused): "
        "set taskmanager.host to an address of this TaskManager that the JobManager can reach"
    )


def test_data_server_drops_a_probe_connection_quietly(caplog):
    server = DataServer("127.0.0.1", 0, secret=b"a test cluster secret of 32 bytes")
    port = server.start()
    try:
        with caplog.at_level(logging.INFO, logger="strom"):
            assert asyncio.run(reachability_problem("tm-a", "127.0.0.1", port, "127.0.0.1")) is None
            with socket.create_connection(("127.0.0.1", port)) as probe:
                probe.shutdown(socket.SHUT_WR)
                probe.settimeout(10)
                while probe.recv(4096):  # the server's authentication hello, then its close
                    pass  # the server closed its end: the reader thread is done
    finally:
        server.close()
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


# -- bind addresses that are not this host's ------------------------------------------------------
def test_check_bindable_names_the_key_and_suggests_every_interface():
    check_bindable(rpc_bind(Configuration({"jobmanager.bind-host": "0.0.0.0"})))
    with pytest.raises(BindAddressError) as e:
        check_bindable(rpc_bind(Configuration({"jobmanager.rpc.address": NOT_THIS_HOST})))
    assert str(e.value) == (
        f"cannot bind {NOT_THIS_HOST} (jobmanager.bind-host is unset, so jobmanager.rpc.address): not an address "
        "of this host; set jobmanager.bind-host to 0.0.0.0 (every interface) or to an address of this host"
    )


@pytest.mark.parametrize("key", ["jobmanager.bind-host", "rest.bind-address", "metrics.reporter.prom.host"])
def test_jobmanager_with_a_bind_address_of_another_host_exits_with_one_line(key):
    done = strom("jobmanager", "-D", "rest.port=0", "-D", "jobmanager.rpc.port=0", "-D",
                 "metrics.reporter.prom.port=0", "-D", f"{key}={NOT_THIS_HOST}")
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert error_lines(done.stderr) == [
        f"strom: error: cannot bind {NOT_THIS_HOST} ({key}): not an address of this host; "
        f"set {key} to 0.0.0.0 (every interface) or to an address of this host"
    ], done.stderr


@pytest.mark.parametrize("key", ["taskmanager.bind-host", "metrics.reporter.prom.host"])
def test_taskmanager_with_a_bind_address_of_another_host_exits_with_one_line(key):
    done = strom("taskmanager", "--jobmanager", f"127.0.0.1:{free_port()}", "-D", f"{key}={NOT_THIS_HOST}")
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert error_lines(done.stderr) == [
        f"strom: error: cannot bind {NOT_THIS_HOST} ({key}): not an address of this host; "
        f"set {key} to 0.0.0.0 (every interface) or to an address of this host"
    ], done.stderr


# -- TaskManagers that cannot register -------------------------------------------------------------
@pytest.mark.parametrize("how", ["--jobmanager", "jobmanager.rpc.address"])
def test_taskmanager_without_a_reachable_jobmanager_exits_after_the_registration_timeout(how):
    port = free_port()
    where = (["--jobmanager", f"127.0.0.1:{port}"] if how == "--jobmanager"
             else ["-D", "jobmanager.rpc.address=127.0.0.1", "-D", f"jobmanager.rpc.port={port}"])
    done = strom("taskmanager", *where, "-D", "taskmanager.registration.timeout=2 s", "-D",
                 "metrics.reporter.prom.port=0")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert error_lines(done.stderr) == [
        f"strom: error: TaskManager could not register at JobManager 127.0.0.1:{port} ({how}) within 2 s: "
        "connection refused; check that the JobManager runs and that the address is reachable from this host"
    ], done.stderr
    warnings = [line for line in done.stderr.splitlines() if " WARNING " in line]
    assert warnings and f"127.0.0.1:{port} ({how})" in warnings[0]


@pytest.fixture
def jobmanager_only():
    cluster = SessionCluster(taskmanagers=0, slots=1)
    yield cluster
    cluster.close()


def test_taskmanager_advertising_an_address_the_jobmanager_cannot_reach_is_refused(jobmanager_only):
    """Advertises 127.0.0.2 while its data server binds 127.0.0.3: the JobManager's probe is refused."""
    done = strom("taskmanager", "--jobmanager", f"127.0.0.1:{jobmanager_only.rpc_port}",
                 "-D", "taskmanager.host=127.0.0.2", "-D", "taskmanager.bind-host=127.0.0.3",
                 "-D", "taskmanager.resource-id=tm-x", "-D", "metrics.reporter.prom.port=0")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    [line] = error_lines(done.stderr)
    assert line.startswith("strom: error: TaskManager tm-x advertises 127.0.0.2:")
    assert line.endswith(
        "but the JobManager cannot reach it (connection refused): set taskmanager.host to an address of this "
        "TaskManager that the JobManager can reach"
    )
    assert jobmanager_only.get("/overview")["taskmanagers"] == 0


def test_strom_run_keeps_everything_on_loopback_whatever_the_cluster_config_says(tmp_path: Path):
    """A cluster's config file (STROM_CONF_DIR) names a Service and 0.0.0.0; `strom run` ignores them."""
    (tmp_path / "config.yaml").write_text(textwrap.dedent("""
        jobmanager.rpc.address: jobmanager.invalid
        jobmanager.bind-host: 0.0.0.0
        rest.bind-address: 0.0.0.0
        taskmanager.host: 198.19.255.254
        taskmanager.bind-host: 0.0.0.0
        metrics.reporter.prom.host: 0.0.0.0
    """))
    job = tmp_path / "job.py"
    job.write_text(textwrap.dedent("""
        from strom.datastream import StreamExecutionEnvironment
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.from_collection(list(range(10))).key_by(lambda x: x % 3).map(lambda x: x * 10).print()
        env.execute("tens")
    """))
    env = dict(_env(), STROM_CONF_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "strom.cli", "run", str(job)], capture_output=True, text=True,
                          env=env, timeout=120, cwd=os.fspath(tmp_path))
    assert done.returncode == 0, done.stderr
    # print() of parallel subtasks prefixes "<subtask>> "
    assert sorted(int(line.split()[-1]) for line in done.stdout.splitlines()) == [x * 10 for x in range(10)]
