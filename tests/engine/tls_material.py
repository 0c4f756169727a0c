"""Throwaway certificate authorities and certificates for the TLS tests, made with `cryptography`
alone (independent of strom.common.tls): a CA, leaf certificates it signs (server and client usage,
SAN 127.0.0.1 and localhost), written as PEM (chain, key; encrypted on request) or PKCS#12."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


@dataclass
class Leaf:
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate
    ca_cert: x509.Certificate

    def write_pem(self, directory: Path, stem: str, *, password: bytes | None = None) -> tuple[Path, Path]:
        """(chain.crt, key) as cert-manager lays them out: tls.crt holds leaf + CA, tls.key the key."""
        crt, key = directory / f"{stem}.crt", directory / f"{stem}.key"
        crt.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM)
                        + self.ca_cert.public_bytes(serialization.Encoding.PEM))
        enc = (serialization.BestAvailableEncryption(password) if password
               else serialization.NoEncryption())
        key.write_bytes(self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc))
        return crt, key

    def write_combined_pem(self, directory: Path, stem: str) -> Path:
        """One PEM file with the key and the chain (what Flink's PEM keystore may hold)."""
        path = directory / f"{stem}.pem"
        path.write_bytes(
            self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption())
            + self.cert.public_bytes(serialization.Encoding.PEM)
        )
        return path

    def write_p12(self, directory: Path, stem: str, password: bytes) -> Path:
        path = directory / f"{stem}.p12"
        path.write_bytes(pkcs12.serialize_key_and_certificates(
            stem.encode(), self.key, self.cert, [self.ca_cert], serialization.BestAvailableEncryption(password)))
        return path


class CertificateAuthority:
    def __init__(self, name: str = "strom test CA") -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name)).issuer_name(_name(name))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(self.key, hashes.SHA256())
        )

    def issue(self, cn: str = "strom") -> Leaf:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(cn)).issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .sign(self.key, hashes.SHA256())
        )
        return Leaf(key, cert, self.cert)

    def write_pem(self, directory: Path, stem: str = "ca") -> Path:
        path = directory / f"{stem}.crt"
        path.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))
        return path

    def write_truststore_p12(self, directory: Path, stem: str, password: bytes) -> Path:
        """A PKCS#12 holding only the CA certificate (a truststore)."""
        path = directory / f"{stem}.p12"
        path.write_bytes(pkcs12.serialize_key_and_certificates(
            None, None, None, [self.cert], serialization.BestAvailableEncryption(password)))
        return path


def pem_tls_keys(scope: str, crt: Path, key: Path, ca: Path) -> dict[str, str]:
    """The keys the operator writes for its Secret's files (the contract in the TLS design)."""
    p = f"security.ssl.{scope}."
    return {p + "enabled": "true", p + "keystore-type": "PEM", p + "keystore": str(crt), p + "key": str(key),
            p + "truststore": str(ca)}
