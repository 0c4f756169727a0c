"""SQL FlinkJobs: the verdict on a script, admission, and whether an upgrade can take the job's state.

The engine judges a script (`python -m strom.table.sql_check`, run by clients/sql_checker.py: the operator
may not import the engine's planner) and answers with a `SqlVerdict`: an error with its line and column,
or the plan's stateful operators by uid. These pure functions turn that into decisions:

* admission: a script with an error is an invalid spec, reported with the field, line and column before
  any pod exists (state_machine.next_step then never deploys it, or keeps the last valid spec running);
* upgrade: a savepoint (or last-state) upgrade must restore every piece of the running job's state. The
  running plan's stateful operators are kept in status.sql (written when the job is deployed: the status
  is the operator's write-ahead log), and each must be in the new plan under the same uid and with the
  same kind of state — uids derive from the plan (strom.table's PlanNode.uid hashes the operator's
  sub-plan), so a changed filter, key or aggregate under an operator gives it a new uid. Otherwise the
  upgrade is refused before the running job is stopped, unless spec.job.allowNonRestoredState says to
  drop that state (Flink's --allowNonRestoredState) or upgradeMode 'stateless' starts empty.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from strom_operator.crd.spec import FlinkJobSpec, needs_upgrade
from strom_operator.crd.status import FlinkJobStatus

INCOMPATIBLE_UPGRADE = "IncompatibleUpgrade"
_SHOWN = 3  # operators named in a refusal; the rest are counted


@dataclass(frozen=True, slots=True)
class StatefulOperator:
    uid: str
    state: str  # the runtime operator and its function, e.g. 'one_input:window/'
    name: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"uid": self.uid, "state": self.state, "name": self.name}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StatefulOperator:
        return cls(str(d.get("uid", "")), str(d.get("state", "")), str(d.get("name", "")))


@dataclass(frozen=True, slots=True)
class SqlVerdict:
    """The engine's judgement of one script (sql_check's JSON)."""

    ok: bool
    error: str | None = None
    line: int | None = None
    column: int | None = None
    stateful_operators: tuple[StatefulOperator, ...] = ()

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SqlVerdict:
        if d.get("ok"):
            return cls(True, stateful_operators=tuple(StatefulOperator.from_dict(o)
                                                      for o in d.get("statefulOperators") or ()))
        return cls(False, str(d.get("error") or "invalid SQL script"), _int(d.get("line")), _int(d.get("column")))

    def plan_status(self) -> dict[str, Any]:
        """status.sql: the deployed plan's stateful operators, what the next upgrade is judged against."""
        return {"statefulOperators": [o.to_dict() for o in self.stateful_operators]}


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def script_field(spec: FlinkJobSpec) -> str:
    """The field path that holds the script, for messages."""
    ref = spec.job.sql_from
    if ref is not None:
        return f"spec.job.sqlFrom (ConfigMap {ref.name!r}, key {ref.key!r})"
    return "spec.job.sql"


def admission_error(spec: FlinkJobSpec, verdict: SqlVerdict | None) -> str | None:
    """The script's error as an invalid spec: `spec.job.sql: line 3, column 8: ...`."""
    if verdict is None or verdict.ok:
        return None
    reason = verdict.error or "invalid SQL script"
    if verdict.line is not None and f"line {verdict.line}" not in reason:
        reason = f"line {verdict.line}, column {verdict.column or 1}: {reason}"
    return f"{script_field(spec)}: {reason}"


def deployed_operators(status: FlinkJobStatus) -> tuple[StatefulOperator, ...] | None:
    """The running plan's stateful operators from status.sql; None when not recorded."""
    if not status.sql or "statefulOperators" not in status.sql:
        return None
    return tuple(StatefulOperator.from_dict(o) for o in status.sql.get("statefulOperators") or ())


def lost_state(old: Sequence[StatefulOperator], new: Sequence[StatefulOperator]) -> list[str]:
    """What of `old`'s state the plan `new` cannot take: one phrase per operator."""
    by_uid = {o.uid: o for o in new}
    lost = []
    for o in old:
        now = by_uid.get(o.uid)
        label = f"{o.name or o.uid} (uid {o.uid})" if o.name else f"uid {o.uid}"
        if now is None:
            lost.append(f"{label} is not in the new plan")
        elif now.state != o.state:
            lost.append(f"{label} keeps its uid but its state changes from {o.state!r} to {now.state!r}")
    return lost


def upgrade_refusal(spec: FlinkJobSpec, reconciled: FlinkJobSpec | None, status: FlinkJobStatus,
                    verdict: SqlVerdict | None) -> str | None:
    """Why the change to `spec` must not stop the running job, or None when the upgrade may go on."""
    if verdict is None or not verdict.ok or not spec.job.is_sql or reconciled is None:
        return None
    if not needs_upgrade(spec, reconciled.to_dict()):
        return None
    if spec.job.upgrade_mode == "stateless" or spec.job.allow_non_restored_state:
        return None  # starts empty, or the user said to drop what does not fit
    old = deployed_operators(status)
    if old is None:
        return None  # no SQL plan recorded (e.g. the running job was a Python entry point): nothing to judge
    lost = lost_state(old, verdict.stateful_operators)
    if not lost:
        return None
    shown = "; ".join(lost[:_SHOWN]) + (f"; and {len(lost) - _SHOWN} more" if len(lost) > _SHOWN else "")
    return (f"{script_field(spec)}: the new script's plan cannot take the running job's state (upgradeMode "
            f"{spec.job.upgrade_mode!r}): {shown}. The job keeps running the previous script; keep these "
            "operators' queries unchanged, or set spec.job.allowNonRestoredState: true to drop their state, or "
            "upgradeMode: stateless to start empty")
