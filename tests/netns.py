"""Test hosts in Linux network namespaces: each host a network stack and an address of its own.

A `TestNetwork` is one Linux bridge on this machine, holding one /24 of 198.18.0.0/15 (the block
reserved for network tests, RFC 2544 — never 10/8, 172.16/12, 192.168/16 or a public address). The
machine itself is `.1` on the bridge (`gateway`); every `add_host` makes a network namespace with
loopback up and a veth pair into the bridge, and gives it the next free address. Nothing routes out
of the /24: a host reaches the other hosts and the machine, nothing else.

A process runs on a host through `host.command(argv)` (`ip netns exec NS argv`): same filesystem and
users as the machine, only the network is the host's. Names resolve through the host's own hosts file
(`/etc/netns/NS/hosts`, which `ip netns exec` mounts over /etc/hosts); `set_names` rewrites it in place
(same inode, so processes already running see new entries, as pods see DNS change). The host's
resolv.conf names no server, so a name not in the hosts file fails at once instead of waiting on DNS.

Needs root (CI runs as root) and `ip` from iproute2; `unavailable_reason()` says why not, for a skip.
Namespaces, bridges and veths carry this process's pid in their names; ones whose process is gone
(a killed test run) are removed when the next network is made.
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

TEST_BLOCK = ipaddress.ip_network("198.18.0.0/15")
NETNS_ETC = Path("/etc/netns")
LOCK_FILE = Path("/tmp/strom-test-networks.lock")
# Every name this module makes: "st" <pid> "n" <net> ["h" <host> ["p"]], numbers in base 36, so that
# the longest (a veth peer) stays within Linux's 15 characters for an interface name.
PREFIX = "st"
_NAME = re.compile(rf"^{PREFIX}([0-9a-z]+)n([0-9a-z]+)(?:h[0-9a-z]+p?)?$")


def _b36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if not number:
            return out


def unavailable_reason() -> str | None:
    """Why test networks cannot be made on this machine, or None when they can."""
    if shutil.which("ip") is None:
        return "network namespaces need 'ip' (Debian package iproute2)"
    if os.geteuid() != 0:
        return "network namespaces need root (CI runs as root)"
    probe = f"{PREFIX}{_b36(os.getpid())}n0"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"'ip netns add' failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "delete", probe], capture_output=True)
    return None


def _ip(*args: str, netns: str | None = None) -> None:
    argv = ["ip", *(("-n", netns) if netns else ()), *args]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise OSError(f"{' '.join(argv)}: {done.stderr.strip()}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale() -> None:
    """Namespaces and links of test runs whose process is gone."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    for name in listed:
        m = _NAME.match(name)
        if m and not _alive(int(m.group(1), 36)):
            subprocess.run(["ip", "netns", "delete", name], capture_output=True)
            shutil.rmtree(NETNS_ETC / name, ignore_errors=True)
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    for line in links.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        m = _NAME.match(name)
        if m and not _alive(int(m.group(1), 36)):
            subprocess.run(["ip", "link", "delete", name], capture_output=True)


def _subnets_in_use() -> set[ipaddress.IPv4Network]:
    out = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True).stdout
    used = set()
    for match in re.finditer(r"inet (\d+\.\d+\.\d+\.\d+)/", out):
        address = ipaddress.ip_address(match.group(1))
        if address in TEST_BLOCK:
            used.add(ipaddress.ip_network(f"{address}/24", strict=False))
    return used


@dataclass(frozen=True, slots=True)
class TestHost:
    """One network namespace on a TestNetwork: its name and address."""

    name: str  # a readable name (the pod's, the role's)
    netns: str  # the namespace, for `ip netns exec`
    ip: str

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv` run on this host (its network, the machine's filesystem)."""
        return ["ip", "netns", "exec", self.netns, *argv]

    def run(self, argv: Sequence[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.command(argv), capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]


@dataclass
class TestNetwork:
    """A bridge holding one /24 of the test block, and the hosts attached to it."""

    subnet: ipaddress.IPv4Network
    bridge: str
    index: int
    hosts: dict[str, TestHost] = field(default_factory=dict)  # by netns
    _next: int = 0
    _free: list[int] = field(default_factory=list)

    __test__ = False  # not a pytest test class

    @classmethod
    def create(cls) -> TestNetwork:
        reason = unavailable_reason()
        if reason is not None:
            raise OSError(reason)
        with open(LOCK_FILE, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # two test runs must not take the same /24
            _remove_stale()
            used = _subnets_in_use()
            subnets = TEST_BLOCK.subnets(new_prefix=24)
            for index, subnet in enumerate(subnets):
                if index > 0 and subnet not in used:  # index 0 left to whoever set up the block by hand
                    break
            else:
                raise OSError(f"every /24 of {TEST_BLOCK} is in use on this machine")
            bridge = f"{PREFIX}{_b36(os.getpid())}n{_b36(index)}"
            _ip("link", "add", bridge, "type", "bridge")
            network = cls(subnet=subnet, bridge=bridge, index=index)
            _ip("addr", "add", f"{network.gateway}/24", "dev", bridge)
            _ip("link", "set", bridge, "up")
        return network

    @property
    def gateway(self) -> str:
        """This machine's address on the network (the hosts reach it there)."""
        return str(self.subnet.network_address + 1)

    def add_host(self, name: str) -> TestHost:
        """A new namespace attached to the bridge, with the next free address."""
        number = self._free.pop(0) if self._free else self._take_number()
        netns = f"{self.bridge}h{_b36(number)}"
        ip = str(self.subnet.network_address + 1 + number)
        peer = f"{netns}p"
        try:
            _ip("netns", "add", netns)
            _ip("link", "add", netns, "type", "veth", "peer", "name", peer)
            _ip("link", "set", peer, "netns", netns)
            _ip("link", "set", netns, "master", self.bridge)
            _ip("link", "set", netns, "up")
            _ip("addr", "add", f"{ip}/24", "dev", peer, netns=netns)
            _ip("link", "set", peer, "up", netns=netns)
            _ip("link", "set", "lo", "up", netns=netns)
        except OSError:
            subprocess.run(["ip", "netns", "delete", netns], capture_output=True)
            subprocess.run(["ip", "link", "delete", netns], capture_output=True)
            raise
        host = TestHost(name, netns, ip)
        self.hosts[netns] = host
        etc = NETNS_ETC / netns
        etc.mkdir(parents=True, exist_ok=True)
        # no name server: a name missing from the hosts file fails at once
        (etc / "resolv.conf").write_text("options timeout:1 attempts:1\n")
        self.set_names(host, {})
        return host

    def _take_number(self) -> int:
        self._next += 1
        if self._next > 253:
            raise OSError(f"{self.subnet} has no free address left")
        return self._next

    def set_names(self, host: TestHost, names: Mapping[str, Iterable[str]]) -> None:
        """The host's hosts file: its own name, and `names` (address -> names), written in place."""
        lines = ["127.0.0.1\tlocalhost", f"{host.ip}\t{host.name}"]
        lines += [f"{address}\t{' '.join(aliases)}" for address, aliases in names.items() if aliases]
        path = NETNS_ETC / host.netns / "hosts"
        # "w" truncates the same inode: the bind mount of a running `ip netns exec` sees the new text
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")

    def remove_host(self, host: TestHost) -> None:
        """Delete the namespace (its veth goes with it); its address is free again."""
        subprocess.run(["ip", "netns", "delete", host.netns], capture_output=True)
        subprocess.run(["ip", "link", "delete", host.netns], capture_output=True)
        shutil.rmtree(NETNS_ETC / host.netns, ignore_errors=True)
        if self.hosts.pop(host.netns, None) is not None:
            self._free.append(int(host.netns.rsplit("h", 1)[1], 36))

    def close(self) -> None:
        for host in list(self.hosts.values()):
            self.remove_host(host)
        subprocess.run(["ip", "link", "delete", self.bridge], capture_output=True)
