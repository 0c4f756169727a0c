"""Generating a FlinkJob's TLS material: its own certificate authority and one leaf certificate.

Pure (no Kubernetes): `generate_tls_material` returns the PEM texts that tls_secret.py stores in the
Secret `<name>-tls` in cert-manager's layout (tls.crt, tls.key, ca.crt). One CA per FlinkJob, so a
certificate of one job is worthless to another: the job's processes trust only ca.crt, and every
process (JobManager, TaskManagers, the operator as a REST client) presents the same leaf, both as
server and as client (mutual TLS). The CA's private key is discarded once the leaf is signed: nothing
else can ever be signed by it, and it is not there to steal. The leaf names the JobManager Service's
DNS names (REST clients check them); internal TLS, as Flink's, checks no hostname, so TaskManagers
need no SAN for their pod IPs. Keys are ECDSA P-256: fast to generate in a reconciliation, and what
OpenSSL and Python's ssl read in PEM. The material is valid for `VALIDITY` (10 years, like a
kubeadm CA): the operator never rewrites the Secret (it would need the right to patch every Secret,
which reveals them too); rotation is cert-manager's job (spec.security.tls.issuerRef), or delete the
Secret and restart the job.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=3650)
BACKDATE = datetime.timedelta(minutes=5)  # clocks of the nodes may lag the operator's


@dataclass(frozen=True, slots=True)
class TlsMaterial:
    """PEM texts: the leaf certificate, its private key (PKCS#8, unencrypted), the CA certificate."""

    certificate: str
    private_key: str
    ca_certificate: str


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "strom"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64])])


def generate_tls_material(*, ca_name: str, common_name: str, dns_names: tuple[str, ...],
                          now: datetime.datetime | None = None,
                          validity: datetime.timedelta = VALIDITY) -> TlsMaterial:
    """A fresh CA (`ca_name`) and a leaf (`common_name`, SANs `dns_names`) it signed, for server and client use."""
    now = now or datetime.datetime.now(datetime.UTC)
    not_before, not_after = now - BACKDATE, now + validity
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_subject = _name(ca_name)
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder().subject_name(ca_subject).issuer_name(ca_subject)
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(not_before).not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder().subject_name(_name(common_name)).issuer_name(ca_subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(not_before).not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=True, key_cert_sign=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                       critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return TlsMaterial(
        certificate=leaf.public_bytes(pem).decode(),
        private_key=key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()).decode(),
        ca_certificate=ca_cert.public_bytes(pem).decode(),
    )
