"""Asking the engine about a SQL FlinkJob's script: `python -m strom.table.sql_check` in a subprocess.

Why a subprocess: judging a script means planning it (catalog, types, the stateful operators' uids), and
the planner lives in the engine's Table API, which imports strom.datastream — what the operator's import
contract keeps out of the operator (it reaches the engine only through its REST API). The subprocess runs
the very code the JobManager runs (strom.table.sql_application), so a script the operator admits is one
the JobManager can plan, and the uids it reports are the ones a savepoint holds. It answers in JSON
(lifecycle/sql_admission.SqlVerdict). Verdicts are cached by the script's text and the job's options, so
a reconciliation pass costs one check per change of script, not one per pass.

The script comes from spec.job.sql, or from the ConfigMap key spec.job.sqlFrom names (read through the
Kubernetes API; a missing ConfigMap or key is a verdict with an error, so it is reported like a bad script).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import sys
from collections import OrderedDict
from collections.abc import Mapping

from strom_operator.clients.action_failures import SqlCheckUnavailable
from strom_operator.clients.kube_api import KubeApi
from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.lifecycle.sql_admission import SqlVerdict

log = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 120.0
CACHE_SIZE = 256
# options that change how a script plans (session time zone, mini-batch, ...): the job's flinkConfiguration
# keys under table.* reach the check as -D, as the JobManager would apply them
PLANNER_PREFIXES = ("table.", "pipeline.max-parallelism")


class SqlChecker:
    def __init__(self, kube: KubeApi, *, python: str = sys.executable, timeout_s: float = CHECK_TIMEOUT_S) -> None:
        self.kube = kube
        self.python = python
        self.timeout_s = timeout_s
        self._cache: OrderedDict[str, SqlVerdict] = OrderedDict()

    async def verdict(self, namespace: str, spec: FlinkJobSpec) -> SqlVerdict | None:
        """The verdict on the spec's script, None for a Python entry point."""
        if not spec.job.is_sql:
            return None
        script = await self.script(namespace, spec)
        if isinstance(script, SqlVerdict):
            return script
        options = {k: v for k, v in spec.flink_configuration.items() if k.startswith(PLANNER_PREFIXES)}
        options["execution.runtime-mode"] = spec.mode.upper()  # a batch script is validated as batch
        return await self.check(script, options)

    async def script(self, namespace: str, spec: FlinkJobSpec) -> str | SqlVerdict:
        """The script's text, or a verdict saying why it cannot be read."""
        if spec.job.sql is not None:
            return spec.job.sql
        ref = spec.job.sql_from
        assert ref is not None
        cm = await self.kube.get("ConfigMap", namespace, ref.name)
        if cm is None:
            return SqlVerdict(False, f"ConfigMap {ref.name!r} not found in namespace {namespace!r}: create it with "
                                     f"the script under key {ref.key!r}")
        data: Mapping[str, str] = cm.get("data") or {}
        if ref.key not in data:
            keys = ", ".join(sorted(data)) or "none"
            return SqlVerdict(False, f"ConfigMap {ref.name!r} has no key {ref.key!r} (its keys: {keys})")
        return str(data[ref.key])

    async def check(self, script: str, options: Mapping[str, str]) -> SqlVerdict:
        key = hashlib.sha256(json.dumps([script, sorted(options.items())]).encode()).hexdigest()
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        verdict = await self._run(script, options)
        self._cache[key] = verdict
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return verdict

    async def _run(self, script: str, options: Mapping[str, str]) -> SqlVerdict:
        argv = [self.python, "-m", "strom.table.sql_check", "-"]
        for k, v in sorted(options.items()):
            argv += ["-D", f"{k}={v}"]
        proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(proc.communicate(script.encode()), self.timeout_s)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise SqlCheckUnavailable(f"the SQL check took longer than {self.timeout_s:.0f} s") from None
        try:
            answer = json.loads(out.decode() or "null")
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            tail = (err.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
            raise SqlCheckUnavailable(f"the SQL check failed (exit status {proc.returncode}): {tail}")
        return SqlVerdict.from_json(answer)
