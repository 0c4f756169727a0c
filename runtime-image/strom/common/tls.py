"""TLS from configuration: Flink's `security.ssl.*` keys (`tls_options`) turned into `ssl.SSLContext`s.

Two scopes, as in Flink:
* internal (RPC port, data ports): always mutual. Both sides present a certificate from the internal
  keystore and accept only peers whose certificate chains to the internal truststore; no hostname
  check (pods are reached by IP; possession of a certificate from the cluster's CA is the identity).
* REST: the JobManager serves HTTPS with the rest keystore; with `authentication-enabled` clients must
  present a certificate trusted by the rest truststore. Clients (the `strom` CLI) verify the server
  with the rest truststore (the system's CAs when unset), the hostname per `security.ssl.verify-hostname`,
  and present the rest keystore as their client certificate when one is set.

Material: PEM (a certificate chain, with the key in the same file or in `...key`, Kubernetes TLS
Secrets' tls.crt/tls.key) or PKCS#12 (.p12/.pfx, what Flink users bring). Python's `ssl` reads only
PEM, so PKCS#12 is read with `cryptography` and handed to OpenSSL through an anonymous in-memory file
(memfd; on systems without one, a 0600 temporary file removed at once), its key re-encrypted with a
random one-time password. Everything is read and checked by `cryptography` first, so that bad
material is one line naming the key and what to do (`TlsConfigError`), raised when a process starts
(JobManager, TaskManager, CLI), never at its first connection. TLS 1.2 is the minimum everywhere.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import ssl
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.serialization import pkcs12

from strom.common import tls_options as keys
from strom.common.config_options import ConfigError

if TYPE_CHECKING:
    from strom.common.configuration import Configuration


class TlsConfigError(ConfigError):
    """Unusable TLS configuration or material; the message is one line naming the key."""


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """Where one scope's key material is, as configured (plain strings: pickled to slot processes)."""

    scope: str
    keystore: str
    keystore_type: str
    keystore_password: str
    key_password: str
    key: str
    truststore: str
    truststore_type: str
    truststore_password: str

    def key_name(self, name: str) -> str:
        return f"security.ssl.{self.scope}.{name}"


@dataclass(frozen=True, slots=True)
class RestTlsSettings:
    store: StoreSettings
    authentication: bool  # security.ssl.rest.authentication-enabled
    verify_hostname: bool  # security.ssl.verify-hostname (clients only)


@dataclass(frozen=True, slots=True)
class InternalTls:
    """The two contexts of one process's internal connections: accepting (RPC/data servers) and
    connecting (TaskManager to JobManager, producers to data servers)."""

    server: ssl.SSLContext
    client: ssl.SSLContext


# -- settings (pure) ------------------------------------------------------------------------------
def _refuse_umbrella(config: Configuration) -> None:
    if config.contains_key(keys.DEPRECATED_UMBRELLA.key):
        raise TlsConfigError(
            f"{keys.DEPRECATED_UMBRELLA.key} (Flink's deprecated umbrella key) is not supported: set "
            f"{keys.INTERNAL_ENABLED.key} and/or {keys.REST_ENABLED.key} instead"
        )


def store_settings(config: Configuration, scope: str) -> StoreSettings:
    o = keys.STORE_OPTIONS[scope]
    return StoreSettings(
        scope=scope,
        keystore=config.get(o["keystore"]),
        keystore_type=config.get(o["keystore-type"]),
        keystore_password=config.get(o["keystore-password"]),
        key_password=config.get(o["key-password"]),
        key=config.get(o["key"]),
        truststore=config.get(o["truststore"]),
        truststore_type=config.get(o["truststore-type"]),
        truststore_password=config.get(o["truststore-password"]),
    )


def internal_settings(config: Configuration) -> StoreSettings | None:
    """The internal TLS settings, or None when security.ssl.internal.enabled is false. Raises
    TlsConfigError when enabled without a keystore or truststore."""
    _refuse_umbrella(config)
    if not config.get(keys.INTERNAL_ENABLED):
        return None
    store = store_settings(config, keys.INTERNAL)
    for name, value in (("keystore", store.keystore), ("truststore", store.truststore)):
        if not value:
            raise TlsConfigError(
                f"{keys.INTERNAL_ENABLED.key} is true but {store.key_name(name)} is not set: name the PEM or "
                f"PKCS#12 file with this process's {'certificate' if name == 'keystore' else 'trusted CA'}"
            )
    return store


def rest_settings(config: Configuration) -> RestTlsSettings | None:
    """The REST TLS settings, or None when security.ssl.rest.enabled is false (plain HTTP)."""
    _refuse_umbrella(config)
    if not config.get(keys.REST_ENABLED):
        return None
    return RestTlsSettings(
        store_settings(config, keys.REST),
        authentication=bool(config.get(keys.REST_AUTHENTICATION_ENABLED)),
        verify_hostname=bool(config.get(keys.VERIFY_HOSTNAME)),
    )


def store_type(path: str, configured: str, key: str) -> str:
    """PKCS12 or PEM: as configured, else by the file's extension (.p12/.pfx = PKCS12)."""
    if configured:
        t = configured.strip().upper().replace("#", "").replace("-", "")
        if t not in keys.KEYSTORE_TYPES:
            raise TlsConfigError(f"invalid value {configured!r} for {key!r}: expected PKCS12 or PEM")
        return t
    return "PKCS12" if path.lower().endswith((".p12", ".pfx")) else "PEM"


# -- reading material -----------------------------------------------------------------------------
def _read(path: str, key: str) -> bytes:
    try:
        with open(os.path.expanduser(path), "rb") as f:
            return f.read()
    except OSError as e:
        why = e.strerror or e
        raise TlsConfigError(f"cannot read {path} ({key}): {why}; check the path and its permissions") from None


@dataclass(frozen=True, slots=True)
class _Identity:
    key: PrivateKeyTypes
    chain: list[x509.Certificate]


def _load_pkcs12(data: bytes, password: str, path: str, key: str, password_key: str) -> pkcs12.PKCS12KeyAndCertificates:
    try:
        return pkcs12.load_pkcs12(data, password.encode() or None)
    except ValueError as e:
        why = str(e).lower()
        if "password" in why or "mac" in why or "decrypt" in why:
            hint = f"set {password_key} to the file's password" if not password else f"{password_key} is wrong"
            raise TlsConfigError(f"cannot open the PKCS#12 file {path} ({key}): {hint}") from None
        raise TlsConfigError(f"{path} ({key}) is not a PKCS#12 file: {e}; set the matching *-type (PEM)") from None


def load_identity(store: StoreSettings) -> _Identity:
    """This process's private key and certificate chain (leaf first), checked to belong together."""
    ks_key = store.key_name("keystore")
    data = _read(store.keystore, ks_key)
    if store_type(store.keystore, store.keystore_type, store.key_name("keystore-type")) == "PKCS12":
        password = store.keystore_password or store.key_password
        password_key = store.key_name("keystore-password")
        p12 = _load_pkcs12(data, password, store.keystore, ks_key, password_key)
        if p12.key is None or p12.cert is None:
            raise TlsConfigError(f"the PKCS#12 file {store.keystore} ({ks_key}) holds no key with a certificate")
        chain = [p12.cert.certificate, *(c.certificate for c in p12.additional_certs)]
        return _checked_pair(p12.key, chain, store, store.keystore)
    try:
        chain = x509.load_pem_x509_certificates(data)
    except ValueError:
        raise TlsConfigError(
            f"{store.keystore} ({ks_key}) holds no PEM certificate; name the certificate chain (e.g. tls.crt), or "
            f"set {store.key_name('keystore-type')}: PKCS12 for a PKCS#12 file"
        ) from None
    key_key = store.key_name("key")
    key_path, key_data = (store.key, _read(store.key, key_key)) if store.key else (store.keystore, data)
    if b"PRIVATE KEY-----" not in key_data:
        raise TlsConfigError(
            f"no private key in {key_path}: set {key_key} to the PEM private key file (e.g. tls.key)"
            if not store.key
            else f"{key_path} ({key_key}) holds no PEM private key"
        )
    pw_key = store.key_name("key-password")
    try:
        private = serialization.load_pem_private_key(key_data, store.key_password.encode() or None)
    except TypeError:  # encrypted without a password, or a password for a key that is not encrypted
        hint = f"set {pw_key}" if not store.key_password else f"unset {pw_key} (the key is not encrypted)"
        raise TlsConfigError(f"cannot read the private key in {key_path}: {hint}") from None
    except ValueError as e:
        why = str(e).lower()
        if "password" in why or "decrypt" in why or "bad" in why:
            raise TlsConfigError(f"cannot decrypt the private key in {key_path}: {pw_key} is wrong") from None
        raise TlsConfigError(f"cannot read the private key in {key_path}: {e}") from None
    return _checked_pair(private, chain, store, key_path)


def _checked_pair(
    private: PrivateKeyTypes, chain: list[x509.Certificate], store: StoreSettings, key_path: str
) -> _Identity:
    public = serialization.PublicFormat.SubjectPublicKeyInfo
    der = serialization.Encoding.DER
    if private.public_key().public_bytes(der, public) != chain[0].public_key().public_bytes(der, public):
        raise TlsConfigError(
            f"the private key in {key_path} does not match the certificate in {store.keystore} "
            f"({store.key_name('keystore')}): give the key of that certificate"
        )
    return _Identity(private, chain)


def load_trusted(store: StoreSettings) -> bytes:
    """The trusted CA certificates as PEM (`cadata`)."""
    ts_key = store.key_name("truststore")
    data = _read(store.truststore, ts_key)
    if store_type(store.truststore, store.truststore_type, store.key_name("truststore-type")) == "PKCS12":
        password_key = store.key_name("truststore-password")
        p12 = _load_pkcs12(data, store.truststore_password, store.truststore, ts_key, password_key)
        certs = [c.certificate for c in p12.additional_certs] + ([p12.cert.certificate] if p12.cert else [])
    else:
        try:
            certs = x509.load_pem_x509_certificates(data)
        except ValueError:
            certs = []
    if not certs:
        raise TlsConfigError(f"{store.truststore} ({ts_key}) holds no certificate: name the CA certificate(s) to trust")
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)


@contextlib.contextmanager
def _in_memory_file(data: bytes) -> Iterator[str]:
    """A path OpenSSL can open that holds `data`: an anonymous memory file (Linux memfd, never on
    disk), else a 0600 temporary file deleted as soon as it was read."""
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fd = os.memfd_create("strom-tls", os.MFD_CLOEXEC)
        try:
            os.write(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    fd, path = tempfile.mkstemp(prefix="strom-tls-")  # mode 0600
    try:
        os.write(fd, data)
        os.close(fd)
        yield path
    finally:
        os.unlink(path)


def _load_identity_into(ctx: ssl.SSLContext, store: StoreSettings) -> None:
    identity = load_identity(store)
    one_time = secrets.token_hex(16)
    pem = identity.key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(one_time.encode()),
    ) + b"".join(c.public_bytes(serialization.Encoding.PEM) for c in identity.chain)
    with _in_memory_file(pem) as path:
        try:
            ctx.load_cert_chain(path, password=one_time)
        except ssl.SSLError as e:  # checked above; OpenSSL may still refuse (e.g. a key too weak for its policy)
            raise TlsConfigError(
                f"OpenSSL refused the key and certificate of {store.keystore} ({store.key_name('keystore')}): "
                f"{e.reason or e}"
            ) from None


def _base(purpose: int) -> ssl.SSLContext:
    ctx = ssl.SSLContext(purpose)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


# -- contexts -------------------------------------------------------------------------------------
def internal_contexts(store: StoreSettings) -> InternalTls:
    """Mutual TLS for RPC and data connections: both sides present the keystore's certificate and
    require one trusted by the truststore; no hostname check (as Flink's internal SSL)."""
    cadata = load_trusted(store).decode()
    server = _base(ssl.PROTOCOL_TLS_SERVER)
    client = _base(ssl.PROTOCOL_TLS_CLIENT)
    client.check_hostname = False
    for ctx in (server, client):
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(cadata=cadata)
        _load_identity_into(ctx, store)
    return InternalTls(server=server, client=client)


def internal_tls(config: Configuration) -> InternalTls | None:
    """This process's internal TLS contexts, or None when internal TLS is off; TlsConfigError when the
    configuration or its material is unusable."""
    store = internal_settings(config)
    return None if store is None else internal_contexts(store)


def rest_server_context(settings: RestTlsSettings) -> ssl.SSLContext:
    store = settings.store
    if not store.keystore:
        raise TlsConfigError(
            f"{keys.REST_ENABLED.key} is true but {store.key_name('keystore')} is not set: name the PEM or PKCS#12 "
            "file with the JobManager's REST certificate"
        )
    ctx = _base(ssl.PROTOCOL_TLS_SERVER)
    _load_identity_into(ctx, store)
    if settings.authentication:
        if not store.truststore:
            raise TlsConfigError(
                f"{keys.REST_AUTHENTICATION_ENABLED.key} is true but {store.key_name('truststore')} is not set: name "
                "the CA that signs the REST clients' certificates"
            )
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(cadata=load_trusted(store).decode())
    return ctx


def rest_client_context(settings: RestTlsSettings) -> ssl.SSLContext:
    """What a REST client (the CLI) connects with: verifies the JobManager (rest truststore, else the
    system's CAs) and presents the rest keystore as its certificate when one is configured."""
    store = settings.store
    ctx = _base(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = settings.verify_hostname
    ctx.verify_mode = ssl.CERT_REQUIRED
    if store.truststore:
        ctx.load_verify_locations(cadata=load_trusted(store).decode())
    else:
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if store.keystore:
        _load_identity_into(ctx, store)
    elif settings.authentication:
        raise TlsConfigError(
            f"{keys.REST_AUTHENTICATION_ENABLED.key} is true but {store.key_name('keystore')} is not set: name the "
            "client certificate (PEM or PKCS#12) the JobManager trusts"
        )
    return ctx


def rest_server_tls(config: Configuration) -> ssl.SSLContext | None:
    settings = rest_settings(config)
    return None if settings is None else rest_server_context(settings)


def rest_client_tls(config: Configuration) -> ssl.SSLContext | None:
    settings = rest_settings(config)
    return None if settings is None else rest_client_context(settings)
