"""The cluster secret: which bytes a process proves it knows on every RPC and data connection.

Where it comes from, first found wins:

1. the environment variable `STROM_CLUSTER_SECRET` (the operator passes it from a Kubernetes
   Secret; the mini-cluster passes its own to its TaskManagers);
2. `security.cluster-secret`;
3. the file `security.cluster-secret-file` (default `~/.strom/cluster-secret`). When that file is the
   default and does not exist, the first process that needs it creates it: 32 random bytes as hex,
   mode 0600, published with a hard link so no process ever reads a half-written file. That is
   Erlang's cookie: `strom jobmanager` and `strom taskmanager` on one host (or on hosts sharing a
   home directory) agree without any setup.

A secret shorter than `MIN_SECRET_BYTES` is a ConfigError naming where it came from. The secret is
the text's UTF-8 bytes (surrounding whitespace of a file dropped), used as the HMAC key as it is.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from typing import Any

from strom.common import config_options as opts
from strom.common.config_options import ConfigError

ENV_VAR = "STROM_CLUSTER_SECRET"
MIN_SECRET_BYTES = 16


def generate_secret() -> str:
    """A fresh random secret (64 hex digits): for a mini-cluster's processes or a new cookie file."""
    return secrets.token_hex(32)


def _checked(text: str, where: str) -> bytes:
    secret = text.encode()
    if len(secret) < MIN_SECRET_BYTES:
        raise ConfigError(
            f"the cluster secret from {where} is {len(secret)} bytes; it must be at least {MIN_SECRET_BYTES} "
            "(e.g. 64 random hex digits: python -c 'import secrets; print(secrets.token_hex(32))')"
        )
    return secret


def resolve_cluster_secret(config: Any, *, environ: Mapping[str, str] | None = None) -> bytes:
    """This process's cluster secret, from the environment, the configuration or the secret file
    (created when it is the default and missing). Raises ConfigError naming the source when the
    secret is too short or the file cannot be read or created."""
    env = os.environ if environ is None else environ
    if env.get(ENV_VAR):
        return _checked(env[ENV_VAR], ENV_VAR)
    value = config.get(opts.CLUSTER_SECRET)
    if value:
        return _checked(value, opts.CLUSTER_SECRET.key)
    path = config.get(opts.CLUSTER_SECRET_FILE)
    is_default = not config.contains_key(opts.CLUSTER_SECRET_FILE.key)
    text = _read_or_create(os.path.expanduser(path), create=is_default)
    return _checked(text, f"{opts.CLUSTER_SECRET_FILE.key} ({path})")


def _read_or_create(path: str, *, create: bool) -> str:
    key = opts.CLUSTER_SECRET_FILE.key
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except FileNotFoundError:
        if not create:
            raise ConfigError(
                f"{key} names {path}, which does not exist; create it with a random secret (mode 0600) or set "
                f"{opts.CLUSTER_SECRET.key} or {ENV_VAR}"
            ) from None
    except OSError as e:
        raise ConfigError(f"cannot read the cluster secret file {path} ({key}): {e.strerror or e}") from None
    try:
        _create(path)
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError as e:
        raise ConfigError(
            f"cannot create the cluster secret file {path} ({key}): {e.strerror or e}; set {key} to a writable "
            f"path, or set {opts.CLUSTER_SECRET.key} or {ENV_VAR}"
        ) from None


def _create(path: str) -> None:
    """Publish a new secret at `path` unless another process did first. The content is complete
    before the name appears (written to a private temporary file, then hard-linked): a concurrent
    reader sees no file or the whole secret, never an empty one."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, mode=0o700, exist_ok=True)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(generate_secret() + "\n")
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # fails if another process published first: theirs is the secret
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)
