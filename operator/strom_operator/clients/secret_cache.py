"""Secrets the operator reads (spec.s3.credentialsSecret), cached for a while instead of read on every pass.

A pass that touches S3 (HA-data cleanup, savepoint disposal) needs the credentials; reading the
Secret each time made 20 GETs in two minutes for one FlinkJob. A found Secret is kept `ttl_s`
(a rotated key is picked up within a minute); a missing one `missing_ttl_s`, short, so a Secret
created after the FlinkJob is noticed at the next retry. RBAC: secrets `get`, in the watched
namespaces only.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import Any, Protocol

from strom_operator.clients.action_failures import S3CredentialsMissing
from strom_operator.resources.pods import CREDENTIAL_KEYS as S3_KEYS

TTL_S = 60.0
MISSING_TTL_S = 10.0


class SecretReader(Protocol):
    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None: ...


class SecretCache:
    def __init__(self, kube: SecretReader, *, ttl_s: float = TTL_S, missing_ttl_s: float = MISSING_TTL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.kube = kube
        self.ttl_s = ttl_s
        self.missing_ttl_s = missing_ttl_s
        self._clock = clock
        self._entries: dict[tuple[str, str], tuple[float, dict[str, Any] | None]] = {}

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The Secret, or None when it does not exist; API errors (403) are raised, not cached."""
        key = (namespace, name)
        now = self._clock()
        entry = self._entries.get(key)
        if entry is not None and now < entry[0]:
            return entry[1]
        secret = await self.kube.get("Secret", namespace, name)
        self._entries[key] = (now + (self.ttl_s if secret is not None else self.missing_ttl_s), secret)
        return secret

    def forget(self, namespace: str, name: str) -> None:
        self._entries.pop((namespace, name), None)

    async def s3_credentials(self, namespace: str, name: str) -> dict[str, str]:
        """The S3 keys of Secret `name`; S3CredentialsMissing names what is missing and what to do."""
        secret = await self.get(namespace, name)
        if secret is None:
            raise S3CredentialsMissing(f"Secret {namespace}/{name} (spec.s3.credentialsSecret) not found: create it "
                                       f"with the keys {' and '.join(S3_KEYS)}")
        data = secret.get("data") or {}
        credentials = {k: base64.b64decode(v).decode() for k, v in data.items()}
        absent = [k for k in S3_KEYS if not credentials.get(k)]
        if absent:
            raise S3CredentialsMissing(f"Secret {namespace}/{name} (spec.s3.credentialsSecret) has no "
                                       f"{' and no '.join(absent)}: add the key")
        return credentials
