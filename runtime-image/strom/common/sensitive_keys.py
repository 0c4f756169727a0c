"""Which configuration keys hold secrets, and how their values are shown: one rule for REST and logs.

Flink's `GlobalConfiguration.isSensitive`: a key is sensitive when its lower-cased name contains one
of the words below; we add "access-key" (`s3.access-key` identifies an account). Every place that
shows configuration (REST `/jobmanager/config`, `/jobs/:id/config`, `/jobs/:id/jobmanager/config`,
`Configuration.__repr__`, log lines) masks through this module, so the rule cannot drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Flink's GlobalConfiguration.SENSITIVE_KEYS, plus "access-key".
SENSITIVE_KEY_WORDS = (
    "password",
    "secret",
    "fs.azure.account.key",
    "apikey",
    "auth-params",
    "service-key",
    "token",
    "basic-auth",
    "jaas.config",
    "http-headers",
    "access-key",
)
MASK = "******"  # Flink's GlobalConfiguration.HIDDEN_CONTENT


def is_sensitive_key(key: str) -> bool:
    """True when `key`'s value is a credential and must never be shown."""
    k = key.lower()
    return any(word in k for word in SENSITIVE_KEY_WORDS)


def masked(key: str, value: Any) -> Any:
    """`value`, or the mask when `key` is sensitive."""
    return MASK if is_sensitive_key(key) else value


def masked_mapping(config: Mapping[str, Any]) -> dict[str, str]:
    """`config` as text with sensitive values masked, sorted by key (what REST and logs show)."""
    return {k: MASK if is_sensitive_key(k) else str(v) for k, v in sorted(config.items())}
