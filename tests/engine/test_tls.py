"""TLS material and contexts (strom.common.tls) and secured connections (network/secure_connections.py).

Certificates come from a throwaway CA made with `cryptography` alone (`tls_material`); the peers on
the other end of a handshake are built with the standard library's `ssl` where the test is about
what our contexts accept, so a bug in our context building cannot hide on both sides.
"""

from __future__ import annotations

import asyncio
import io
import logging
import socket
import ssl
import threading
from pathlib import Path
from typing import Any

import pytest
from strom.common.configuration import Configuration
from strom.common.sensitive_keys import MASK, masked_mapping
from strom.common.tls import (
    TlsConfigError,
    internal_tls,
    rest_client_tls,
    rest_server_tls,
)
from strom.runtime.network.peer_auth import DATA, RPC, RefusalLog
from strom.runtime.network.secure_connections import (
    TlsRefused,
    secure_accept,
    secure_accept_async,
    secure_connect,
)

from tests.engine.tls_material import CertificateAuthority, pem_tls_keys

SECRET = b"the cluster secret of the TLS tests"
P = "security.ssl.internal."


class Material:
    def __init__(self, d: Path) -> None:
        self.dir = d
        self.ca = CertificateAuthority()
        self.ca_file = self.ca.write_pem(d)
        self.leaf = self.ca.issue("strom")
        self.crt, self.key = self.leaf.write_pem(d, "tls")
        self.stranger = CertificateAuthority("another CA").issue("stranger")

    def pem(self, **extra: Any) -> Configuration:
        return Configuration({**pem_tls_keys("internal", self.crt, self.key, self.ca_file), **extra})


@pytest.fixture
def m(tmp_path: Path) -> Material:
    return Material(tmp_path)


def handshake(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext, name: str | None = None) -> tuple[bytes, str]:
    """A full TLS exchange over a socket pair: what the client read, and the peer certificate's CN
    the server saw."""
    a, b = socket.socketpair()
    seen: list[str] = []

    def serve() -> None:
        try:
            with server_ctx.wrap_socket(b, server_side=True) as s:
                cert = s.getpeercert()
                seen.append(dict(x[0] for x in cert["subject"])["commonName"] if cert else "")
                s.sendall(b"ok")
        except ssl.SSLError:
            b.close()  # the client refused us: its side raises

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    with client_ctx.wrap_socket(a, server_hostname=name) as c:
        got = c.recv(2)
    t.join(5)
    return got, seen[0]


# -- loading material ------------------------------------------------------------------------------------
def test_pem_keystore_with_a_separate_key_loads_and_both_sides_authenticate(m: Material):
    tls = internal_tls(m.pem())
    assert tls is not None
    assert handshake(tls.server, tls.client) == (b"ok", "strom")
    assert tls.server.verify_mode == tls.client.verify_mode == ssl.CERT_REQUIRED
    assert tls.client.check_hostname is False  # pods are reached by IP, as Flink's internal SSL
    assert tls.server.minimum_version == tls.client.minimum_version == ssl.TLSVersion.TLSv1_2


def test_a_pem_file_holding_key_and_chain_loads_without_a_key_file(m: Material):
    combined = m.leaf.write_combined_pem(m.dir, "combined")
    tls = internal_tls(Configuration({P + "enabled": "true", P + "keystore": str(combined),
                                      P + "truststore": str(m.ca_file)}))
    assert tls is not None and handshake(tls.server, tls.client)[0] == b"ok"


def test_an_encrypted_pem_key_loads_with_its_key_password(m: Material):
    crt, key = m.leaf.write_pem(m.dir, "enc", password=b"key secret")
    conf = Configuration({**pem_tls_keys("internal", crt, key, m.ca_file), P + "key-password": "key secret"})
    tls = internal_tls(conf)
    assert tls is not None and handshake(tls.server, tls.client)[0] == b"ok"


def test_pkcs12_keystore_and_truststore_load_and_talk_to_a_pem_peer(m: Material):
    p12 = m.leaf.write_p12(m.dir, "keystore", b"store secret")
    trust = m.ca.write_truststore_p12(m.dir, "truststore", b"trust secret")
    conf = Configuration({P + "enabled": "true", P + "keystore": str(p12), P + "keystore-password": "store secret",
                          P + "truststore": str(trust), P + "truststore-password": "trust secret"})
    p12_tls, pem_tls = internal_tls(conf), internal_tls(m.pem())
    assert p12_tls is not None and pem_tls is not None
    assert handshake(p12_tls.server, pem_tls.client)[0] == b"ok"
    assert handshake(pem_tls.server, p12_tls.client)[0] == b"ok"


def test_a_pkcs12_file_with_another_extension_needs_its_type(m: Material):
    p12 = m.leaf.write_p12(m.dir, "keystore", b"pw")
    renamed = p12.rename(m.dir / "keystore.bin")
    base = {P + "enabled": "true", P + "keystore": str(renamed), P + "keystore-password": "pw",
            P + "truststore": str(m.ca_file)}
    with pytest.raises(TlsConfigError, match="holds no PEM certificate.*keystore-type: PKCS12"):
        internal_tls(Configuration(base))
    assert internal_tls(Configuration({**base, P + "keystore-type": "PKCS12"})) is not None


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({P + "key": "/nonexistent/tls.key"},
         "cannot read /nonexistent/tls.key (security.ssl.internal.key): No such file or directory; check the path "
         "and its permissions"),
        ({P + "truststore": "/nonexistent/ca.crt"},
         "cannot read /nonexistent/ca.crt (security.ssl.internal.truststore): No such file or directory; check the "
         "path and its permissions"),
        ({P + "keystore": ""},
         "security.ssl.internal.enabled is true but security.ssl.internal.keystore is not set: name the PEM or "
         "PKCS#12 file with this process's certificate"),
        ({P + "truststore": ""},
         "security.ssl.internal.enabled is true but security.ssl.internal.truststore is not set: name the PEM or "
         "PKCS#12 file with this process's trusted CA"),
        ({P + "keystore-type": "JKS"},
         "invalid value 'JKS' for 'security.ssl.internal.keystore-type': expected PKCS12 or PEM"),
        ({"security.ssl.enabled": "true"},
         "security.ssl.enabled (Flink's deprecated umbrella key) is not supported: set security.ssl.internal.enabled "
         "and/or security.ssl.rest.enabled instead"),
    ],
)
def test_unusable_configuration_is_one_line_naming_the_key(m: Material, change: dict[str, str], expected: str):
    with pytest.raises(TlsConfigError) as e:
        internal_tls(m.pem(**change))
    assert str(e.value) == expected


def test_wrong_or_missing_passwords_name_the_password_key(m: Material):
    p12 = m.leaf.write_p12(m.dir, "keystore", b"right")
    base = {P + "enabled": "true", P + "keystore": str(p12), P + "truststore": str(m.ca_file)}
    for password, expected in (
        ("wrong", f"cannot open the PKCS#12 file {p12} (security.ssl.internal.keystore): "
                  "security.ssl.internal.keystore-password is wrong"),
        ("", f"cannot open the PKCS#12 file {p12} (security.ssl.internal.keystore): set "
             "security.ssl.internal.keystore-password to the file's password"),
    ):
        with pytest.raises(TlsConfigError) as e:
            internal_tls(Configuration({**base, P + "keystore-password": password}))
        assert str(e.value) == expected
    crt, key = m.leaf.write_pem(m.dir, "enc", password=b"right")
    with pytest.raises(TlsConfigError) as e:
        internal_tls(Configuration({**pem_tls_keys("internal", crt, key, m.ca_file), P + "key-password": "wrong"}))
    assert str(e.value) == f"cannot decrypt the private key in {key}: security.ssl.internal.key-password is wrong"
    with pytest.raises(TlsConfigError) as e:
        internal_tls(Configuration(pem_tls_keys("internal", crt, key, m.ca_file)))
    assert str(e.value) == f"cannot read the private key in {key}: set security.ssl.internal.key-password"


def test_a_key_that_does_not_match_the_certificate_is_refused(m: Material):
    _, other_key = m.stranger.write_pem(m.dir, "other")
    with pytest.raises(TlsConfigError) as e:
        internal_tls(m.pem(**{P + "key": str(other_key)}))
    assert str(e.value) == (
        f"the private key in {other_key} does not match the certificate in {m.crt} (security.ssl.internal.keystore): "
        "give the key of that certificate"
    )


def test_a_pem_keystore_without_a_key_says_which_key_to_set(m: Material):
    with pytest.raises(TlsConfigError) as e:
        internal_tls(m.pem(**{P + "key": ""}))
    assert str(e.value) == (
        f"no private key in {m.crt}: set security.ssl.internal.key to the PEM private key file (e.g. tls.key)"
    )


def test_internal_tls_is_off_unless_enabled(m: Material):
    assert internal_tls(Configuration()) is None
    assert internal_tls(m.pem(**{P + "enabled": "false"})) is None


# -- REST contexts ---------------------------------------------------------------------------------------
def test_rest_contexts_verify_the_server_by_name_and_require_client_certificates_when_asked(m: Material):
    rest = {k.replace(".internal.", ".rest."): v for k, v in pem_tls_keys("internal", m.crt, m.key, m.ca_file).items()}
    server = rest_server_tls(Configuration({**rest, "security.ssl.rest.authentication-enabled": "true"}))
    client = rest_client_tls(Configuration(rest))
    assert server is not None and client is not None
    assert server.verify_mode == ssl.CERT_REQUIRED and client.check_hostname is True
    assert handshake(server, client, "localhost")[0] == b"ok"  # a name the certificate has
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(server, client, "jobmanager.example")
    plain_server = rest_server_tls(Configuration(rest))
    assert plain_server is not None and plain_server.verify_mode == ssl.CERT_NONE  # server TLS only
    no_check = rest_client_tls(Configuration({**rest, "security.ssl.verify-hostname": "false"}))
    assert no_check is not None and no_check.check_hostname is False
    assert rest_server_tls(Configuration()) is None and rest_client_tls(Configuration()) is None
    with pytest.raises(TlsConfigError, match="security.ssl.rest.authentication-enabled is true but "
                                             "security.ssl.rest.truststore is not set"):
        rest_server_tls(Configuration({**rest, "security.ssl.rest.truststore": "",
                                       "security.ssl.rest.authentication-enabled": "true"}))


# -- secrets ---------------------------------------------------------------------------------------------
def test_tls_passwords_are_masked_and_no_tls_key_reaches_a_jobs_configuration(m: Material):
    from strom.runtime.jobmanager.job_configuration import effective_job_configuration

    passwords = {f"security.ssl.{s}.{k}": "hunter2" for s in ("internal", "rest")
                 for k in ("keystore-password", "key-password", "truststore-password")}
    conf = m.pem(**passwords)
    shown = masked_mapping(conf.to_dict())
    assert all(shown[k] == MASK for k in passwords) and shown[P + "keystore"] == str(m.crt)
    assert "hunter2" not in repr(conf)
    cluster = Configuration({**conf.to_dict(), "pipeline.name": "kept"})
    assert effective_job_configuration(cluster, None).to_dict() == {"pipeline.name": "kept"}


# -- secured connections ----------------------------------------------------------------------------------
def run_accept(tls: Any, purpose: bytes = DATA) -> tuple[socket.socket, list[Any], threading.Thread]:
    """A client socket whose server end runs secure_accept and then reads one frame's first bytes."""
    client, server = socket.socketpair()
    result: list[Any] = []

    def serve() -> None:
        secured = secure_accept(server, secret=SECRET, tls=tls, purpose=purpose, peer="test", refusals=RefusalLog())
        result.append(None if secured is None else secured.recv(5))
        if secured is not None:
            secured.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return client, result, t


def test_tls_then_the_secret_let_frames_through(m: Material):
    tls = internal_tls(m.pem())
    client, result, t = run_accept(tls)
    secured = secure_connect(client, secret=SECRET, tls=tls, purpose=DATA)
    assert isinstance(secured, ssl.SSLSocket) and secured.version() in ("TLSv1.2", "TLSv1.3")
    secured.sendmsg([b"fr", b"ame"])  # the channel's sendmsg works over TLS
    t.join(5)
    secured.close()
    assert result == [b"frame"]


@pytest.mark.parametrize("who", ["plain text", "no certificate", "another CA"])
def test_a_peer_without_the_clusters_certificate_is_refused_before_a_byte_is_read(m: Material, who: str, caplog):
    tls = internal_tls(m.pem())
    client, result, t = run_accept(tls)
    caplog.set_level(logging.WARNING, "strom.runtime.network.peer_auth")
    if who == "plain text":
        client.sendall(b"\x00\x00\x00\x05hello")
        client.settimeout(5)
        try:
            assert client.recv(100) == b""  # closed; not even the peer-authentication hello
        except ConnectionResetError:
            pass  # closed with our bytes unread
    else:
        ctx = ssl.create_default_context(cafile=str(m.ca_file))
        ctx.check_hostname = False
        if who == "another CA":
            crt, key = m.stranger.write_pem(m.dir, "stranger")
            ctx.load_cert_chain(str(crt), str(key))
        try:
            with ctx.wrap_socket(client) as c:
                c.sendall(b"frame")
                c.settimeout(5)
                assert c.recv(100) == b""
        except (ssl.SSLError, ConnectionResetError):
            pass  # refused in the handshake, or at the first read after it (TLS 1.3)
    t.join(5)
    assert result == [None]
    assert "TLS handshake failed" in caplog.text and "nothing it sent was decoded" in caplog.text


def test_a_producer_whose_certificate_the_server_refuses_gets_a_clear_error(m: Material):
    crt, key = m.stranger.write_pem(m.dir, "stranger")
    stranger = internal_tls(Configuration(pem_tls_keys("internal", crt, key, m.ca_file)))
    client, result, t = run_accept(internal_tls(m.pem()))
    with pytest.raises((TlsRefused, ssl.SSLError)) as e:
        secure_connect(client, secret=SECRET, tls=stranger, purpose=DATA)
    t.join(5)
    assert result == [None]
    if isinstance(e.value, TlsRefused):
        assert "does not accept this process's certificate" in str(e.value)


def test_a_probe_that_connects_and_closes_is_not_a_warning(m: Material, caplog):
    client, result, t = run_accept(internal_tls(m.pem()))
    caplog.set_level(logging.WARNING, "strom.runtime.network.peer_auth")
    client.close()
    t.join(5)
    assert result == [None] and caplog.text == ""


def test_the_event_loop_side_secures_the_rpc_port(m: Material):
    tls = internal_tls(m.pem())
    crt, key = m.stranger.write_pem(m.dir, "stranger")
    stranger = internal_tls(Configuration(pem_tls_keys("internal", crt, key, m.ca_file)))
    outcomes: list[Any] = []

    async def main() -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            ok = await secure_accept_async(reader, writer, secret=SECRET, tls=tls, purpose=RPC, refusals=RefusalLog())
            outcomes.append(await reader.readexactly(5) if ok else None)
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        loop = asyncio.get_running_loop()

        def connect(ctx: Any) -> None:
            secured = secure_connect(socket.create_connection(("127.0.0.1", port)), secret=SECRET, tls=ctx,
                                     purpose=RPC)
            secured.sendall(b"frame")
            secured.close()

        await loop.run_in_executor(None, connect, tls)
        with pytest.raises((TlsRefused, ssl.SSLError)):
            await loop.run_in_executor(None, connect, stranger)
        with pytest.raises(OSError):  # plain: the TLS server never says hello
            await loop.run_in_executor(None, connect, None)
        for _ in range(100):
            if len(outcomes) == 3:
                break
            await asyncio.sleep(0.05)
        server.close()

    asyncio.run(main())
    assert outcomes == [b"frame", None, None]


def test_a_client_command_with_unusable_tls_material_fails_in_one_line_before_any_request(tmp_path: Path):
    from strom.client.commands import list_command

    out, err = io.StringIO(), io.StringIO()
    missing = tmp_path / "none.crt"
    code = list_command(["-D", "security.ssl.rest.enabled=true", "-D", f"security.ssl.rest.truststore={missing}",
                         "--jobmanager", "127.0.0.1:1"], stdout=out, stderr=err)  # port 1: a request would fail
    assert code == 2 and out.getvalue() == ""
    assert err.getvalue() == (f"strom list: error: cannot read {missing} (security.ssl.rest.truststore): No such "
                              "file or directory; check the path and its permissions\n")


def test_mismatched_tls_settings_say_which_key_to_set(m: Material):
    tls = internal_tls(m.pem())
    client, result, t = run_accept(None)  # a plain server: the peer-authentication hello comes first
    with pytest.raises(ConnectionError) as e:
        secure_connect(client, secret=SECRET, tls=tls, purpose=DATA)
    t.join(10)
    assert result == [None]
    assert str(e.value).startswith("the data port does not speak TLS (") and str(e.value).endswith(
        "): set security.ssl.internal.enabled on every process or none"
    )
    client, result, t = run_accept(tls)  # a TLS server waits for a ClientHello until its handshake deadline
    with pytest.raises((ConnectionError, TimeoutError)) as e:  # it closes, or this side's equal deadline is first
        secure_connect(client, secret=SECRET, tls=None, purpose=DATA)
    t.join(10)
    assert result == [None]
    assert str(e.value).endswith("; if the peer requires TLS, set security.ssl.internal.enabled here too")
