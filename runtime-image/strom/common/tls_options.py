"""Flink's `security.ssl.*` keys: internal TLS (RPC and data ports) and REST TLS.

Declared here, as a group, and registered in the option registry by `config_options` importing this
module. Every key is read by `strom.common.tls`, once per process at its start; the values of the
`*-password` keys are masked wherever configuration is shown (`sensitive_keys`: they contain
"password"). No key of this group is inherited into a job's configuration: they are the processes'
own (`job_configuration.NOT_INHERITED`).

Flink's deprecated umbrella `security.ssl.enabled` is declared only to be refused with a line naming
the two keys that replace it.
"""

from __future__ import annotations

from strom.common.config_options import ConfigOption, option

INTERNAL, REST = "internal", "rest"
KEYSTORE_TYPES = ("PKCS12", "PEM")


def _store_options(scope: str) -> dict[str, ConfigOption[str]]:
    p = f"security.ssl.{scope}."
    return {
        "keystore": option(
            p + "keystore", "str", "",
            "PKCS#12 (.p12/.pfx) or PEM file with this process's certificate chain (PEM: may include the key).",
        ),
        "keystore-type": option(
            p + "keystore-type", "str", "",
            "PKCS12 or PEM; unset = by the keystore's extension (.p12/.pfx: PKCS12, else PEM).",
        ),
        "keystore-password": option(p + "keystore-password", "str", "", "Password of a PKCS#12 keystore."),
        "key-password": option(p + "key-password", "str", "", "Password of an encrypted private key."),
        "key": option(
            p + "key", "str", "",
            "Strom: PEM private key file when the PEM keystore holds only the certificate chain (tls.key).",
        ),
        "truststore": option(p + "truststore", "str", "", "PEM CA bundle or PKCS#12 file of trusted certificates."),
        "truststore-type": option(
            p + "truststore-type", "str", "", "PKCS12 or PEM; unset = by the truststore's extension."
        ),
        "truststore-password": option(p + "truststore-password", "str", "", "Password of a PKCS#12 truststore."),
    }


INTERNAL_ENABLED = option(
    "security.ssl.internal.enabled",
    "bool",
    False,
    "TLS with mutual authentication on the RPC port and every data port (before the cluster-secret check).",
)
REST_ENABLED = option("security.ssl.rest.enabled", "bool", False, "Serve the REST API over HTTPS.")
REST_AUTHENTICATION_ENABLED = option(
    "security.ssl.rest.authentication-enabled",
    "bool",
    False,
    "REST clients must present a certificate signed by a CA of security.ssl.rest.truststore (mutual TLS).",
)
VERIFY_HOSTNAME = option(
    "security.ssl.verify-hostname",
    "bool",
    True,
    "REST clients check that the JobManager's certificate names the host they connect to.",
)
DEPRECATED_UMBRELLA = option(
    "security.ssl.enabled",
    "bool",
    False,
    "Flink's deprecated umbrella key; refused: set security.ssl.internal.enabled and security.ssl.rest.enabled.",
)

STORE_OPTIONS: dict[str, dict[str, ConfigOption[str]]] = {
    INTERNAL: _store_options(INTERNAL), REST: _store_options(REST)
}

# every key of the group: process-level, never part of a job's configuration
ALL_KEYS: frozenset[str] = frozenset(
    [o.key for group in STORE_OPTIONS.values() for o in group.values()]
    + [o.key for o in (INTERNAL_ENABLED, REST_ENABLED, REST_AUTHENTICATION_ENABLED, VERIFY_HOSTNAME)]
    + [DEPRECATED_UMBRELLA.key]
)
