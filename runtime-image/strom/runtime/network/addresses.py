"""Addresses: what a process binds, what a TaskManager advertises, and one-line errors when either is wrong.

Flink's keys (declared in strom.common.config_options), "unset" being the empty string:

* the JobManager's RPC endpoint binds `jobmanager.bind-host`, unset = `jobmanager.rpc.address`;
  its REST endpoint binds `rest.bind-address`, unset = `rest.address`;
* a TaskManager advertises `taskmanager.host`, unset = the source address of its route to the
  JobManager (`route_source_address`: 127.0.0.1 for a local JobManager, the pod IP on Kubernetes);
  its data servers bind `taskmanager.bind-host`, unset = the advertised host;
* a Prometheus exporter binds `metrics.reporter.prom.host`, unset = its process's bind address.

A `BindAddress` remembers which key it came from, so that an address that is not one of this host
fails with a line naming the key to set (`check_bindable`). The JobManager refuses a TaskManager
whose advertised data address it cannot reach back (`reachability_problem`), before any job sends
records to it.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import os
import socket
from dataclasses import dataclass
from typing import Any

from strom.common import config_options as opts
from strom.common.config_options import ConfigError

# How long the JobManager tries to open a connection to a registering TaskManager's data port.
PROBE_TIMEOUT_S = 3.0


class BindAddressError(ConfigError):
    """A bind address that does not resolve or is not an address of this host."""


@dataclass(frozen=True, slots=True)
class BindAddress:
    """An address a server binds, with the key that sets it and the key its value came from."""

    host: str
    key: str  # the key to set to change it
    source: str  # the key the value was read from: `key` itself, or the key it defaults to

    def describe(self) -> str:
        return self.key if self.source == self.key else f"{self.key} is unset, so {self.source}"


def _bind(config: Any, key_option: opts.ConfigOption, fallback: BindAddress | opts.ConfigOption) -> BindAddress:
    value = config.get(key_option)
    if value:
        return BindAddress(value, key_option.key, key_option.key)
    if isinstance(fallback, BindAddress):
        return BindAddress(fallback.host, key_option.key, fallback.source)
    return BindAddress(config.get(fallback), key_option.key, fallback.key)


def rpc_bind(config: Any) -> BindAddress:
    """What the JobManager's RPC endpoint binds."""
    return _bind(config, opts.JOBMANAGER_BIND_HOST, opts.RPC_ADDRESS)


def rest_bind(config: Any) -> BindAddress:
    """What the JobManager's REST endpoint binds."""
    return _bind(config, opts.REST_BIND_ADDRESS, opts.REST_ADDRESS)


def data_bind(config: Any, advertised: str) -> BindAddress:
    """What a TaskManager's data servers bind, given the host it advertises."""
    source = opts.TASKMANAGER_HOST.key if config.get(opts.TASKMANAGER_HOST) else "the TaskManager's advertised address"
    return _bind(config, opts.TASKMANAGER_BIND_HOST, BindAddress(advertised, opts.TASKMANAGER_HOST.key, source))


def metrics_bind(config: Any, process_bind: BindAddress) -> BindAddress:
    """What a process's Prometheus exporter binds: its own key, else the process's bind address."""
    return _bind(config, opts.METRICS_HOST, process_bind)


def describe_os_error(e: BaseException) -> str:
    """A short reason for a failed resolve/connect/bind: 'connection refused', not '[Errno 111] ...'."""
    if isinstance(e, socket.gaierror):
        return f"the name does not resolve ({e.strerror})"
    if isinstance(e, TimeoutError | socket.timeout):
        return "timed out"
    if isinstance(e, OSError) and (e.errno or e.strerror):
        # the errno's own text: asyncio's strerror is "Connect call failed ('198.18.1.3', 6121)"
        text = os.strerror(e.errno) if e.errno and e.errno > 0 else str(e.strerror)
        return text[0].lower() + text[1:]
    return str(e) or type(e).__name__


def check_bindable(bind: BindAddress) -> None:
    """Raise BindAddressError (one line naming the key) unless `bind.host` resolves to an address
    a socket of this host can bind."""
    fix = f"set {bind.key} to 0.0.0.0 (every interface) or to an address of this host"
    try:
        infos = socket.getaddrinfo(bind.host, None, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise BindAddressError(f"cannot bind {bind.host} ({bind.describe()}): {describe_os_error(e)}; {fix}") from None
    family, _, _, _, sockaddr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((sockaddr[0], 0))
        except OSError as e:
            why = "not an address of this host" if e.errno == errno.EADDRNOTAVAIL else describe_os_error(e)
            raise BindAddressError(f"cannot bind {bind.host} ({bind.describe()}): {why}; {fix}") from None


def route_source_address(host: str, port: int) -> str:
    """This host's address on its route to host:port: the source address a connection there would
    use. A UDP socket's connect() only picks the route; no packet is sent. Raises OSError when the
    name does not resolve or no route leads there."""
    family, kind, proto, _, sockaddr = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_DGRAM)[0]
    with socket.socket(family, kind, proto) as udp:
        udp.connect(sockaddr)
        return str(udp.getsockname()[0])


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    address = ipaddress.ip_address(text.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def advertised_address_problem(advertised_ip: str, peer_ip: str | None) -> str | None:
    """Why an advertised address cannot be the TaskManager's, seen from the peer address of its RPC
    connection, or None. Pure: no I/O."""
    advertised = _ip(advertised_ip)
    if advertised.is_unspecified:
        return "an address to bind, not one to connect to"
    if advertised.is_loopback and peer_ip is not None and not _ip(peer_ip).is_loopback:
        return f"a loopback address, while the TaskManager connects from {peer_ip}"
    return None


async def _probe(ip: str, port: int, timeout: float) -> str | None:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(ip, port), timeout)
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except OSError as e:
        return describe_os_error(e)
    writer.close()  # the data server drops a connection that closes before its handshake, quietly
    try:
        await writer.wait_closed()
    except OSError:
        pass
    return None


async def reachability_problem(
    tm_id: str, host: str, port: int, peer_ip: str | None, *, timeout: float = PROBE_TIMEOUT_S
) -> str | None:
    """The one-line refusal for a TaskManager advertising host:port (its first data port) that this
    process cannot reach back, or None. Runs on the event loop without blocking it."""
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(host, port, family=socket.AF_INET, type=socket.SOCK_STREAM), timeout
        )
        ip = str(infos[0][4][0])
    except (OSError, TimeoutError) as e:
        reason: str | None = describe_os_error(e)
    else:
        reason = advertised_address_problem(ip, peer_ip) or await _probe(ip, port, timeout)
    if reason is None:
        return None
    return (
        f"TaskManager {tm_id} advertises {host}:{port} but the JobManager cannot reach it ({reason}): "
        f"set {opts.TASKMANAGER_HOST.key} to an address of this TaskManager that the JobManager can reach"
    )


def format_duration(ms: int) -> str:
    """5 min, 30 s, 1.5 s, 200 ms: a duration as a person writes it (and Flink parses it)."""
    if ms >= 60_000 and ms % 60_000 == 0:
        return f"{ms // 60_000} min"
    if ms >= 1000:
        return f"{ms / 1000:g} s"
    return f"{ms} ms"
