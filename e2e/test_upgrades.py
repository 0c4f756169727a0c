"""Scenarios 2 and 5: a savepoint upgrade, and the same upgrade with the operator killed in the middle.

The upgrade changes `spec.job.args` (the tag the job writes on its lines) under `upgradeMode:
savepoint`: the operator stops the job with a savepoint into S3 (weed mini), deletes the pods and
deploys the new spec from that savepoint. The keyed counts of the new job continue the old
job's: the union of both jobs' exactly-once output equals the plain-Python reference, so a lost
state (counts restarting), a replay (lines twice) or a gap (records never counted) fails.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from e2e.flinkjobs import (
    exactly_once_report,
    indexes_written,
    keyed_counts_flinkjob,
    output_dir,
    read_output,
    total_records,
)
from e2e.platform import Platform

pytestmark = pytest.mark.timeout(240)

KEYS = 7
PHASES = [(3000, 200.0)]  # ~15 s of records: the upgrade lands in the middle


def start_and_reach_midstream(platform: Platform, name: str) -> Path:
    out = output_dir(platform, name)
    platform.create(keyed_counts_flinkjob(platform, name, out, phases=PHASES, parallelism=2, slots=2, tag="v1"))
    platform.wait_running(name)
    platform.wait(name, lambda: indexes_written(out) >= 300, timeout=60, what="the first job's output under way")
    return out


def upgrade_to_v2(platform: Platform, name: str) -> list[str]:
    args = list(platform.get("FlinkJob", name)["spec"]["job"]["args"])  # type: ignore[index]
    args[args.index("--tag") + 1] = "v2"
    platform.patch_spec(name, {"job": {"args": args}})
    return args


def upgraded(platform: Platform, name: str, args: list[str]) -> dict[str, Any] | None:
    status = platform.status(name)
    done = (status.get("lifecycleState") == "STABLE" and (status.get("jobStatus") or {}).get("state") == "RUNNING"
            and status["reconciliation"]["lastReconciledSpec"]["job"]["args"] == args
            and "upgradeStep" not in status["reconciliation"])
    return status if done else None


def check_upgrade_from_savepoint(platform: Platform, name: str, status: dict[str, Any], out: Path) -> None:
    savepoint = status["savepoints"]["last"]
    assert savepoint["kind"] == "upgrade"
    prefix = savepoint["path"].removeprefix(f"s3://{platform.s3.bucket}/").rstrip("/")
    assert prefix.startswith(f"{name}/savepoints/")
    assert f"{prefix}/_metadata" in platform.s3_keys(prefix + "/"), "the savepoint's _metadata is not in S3"
    assert status["restoredFrom"]["kind"] == "savepoint" and status["restoredFrom"]["path"] == savepoint["path"]
    jm = platform.get("Deployment", f"{name}-jobmanager")
    assert jm is not None
    jm_args = jm["spec"]["template"]["spec"]["containers"][0]["args"]
    assert jm_args[jm_args.index("--from-savepoint") + 1] == savepoint["path"]
    assert jm_args[-1] == "v2"

    n = total_records(PHASES)
    platform.wait(name, lambda: indexes_written(out) >= n, timeout=90, what=f"all {n} records in the output")
    lines = read_output(out)
    report = exactly_once_report(lines, n, KEYS)
    assert report == "", report
    tags = {tag for *_, tag in lines}
    assert tags == {"v1", "v2"}, f"both deployments wrote part of the output, got tags {tags}"
    # the first line of each key the new job wrote continues the old job's count (no restart at 1)
    first_v2 = {}
    for key, count, _index, tag in sorted(lines, key=lambda line: line[2]):
        if tag == "v2":
            first_v2.setdefault(key, count)
    assert first_v2 and all(count > 1 for count in first_v2.values()), first_v2


def test_savepoint_upgrade_writes_to_s3_and_the_new_job_continues_the_keyed_counts(platform: Platform):
    """Scenario 2."""
    name = "e2e-upgrade"
    out = start_and_reach_midstream(platform, name)
    args = upgrade_to_v2(platform, name)
    status = platform.wait(name, lambda: upgraded(platform, name, args), timeout=120, what="the upgrade done")
    check_upgrade_from_savepoint(platform, name, status, out)
    assert status["observedGeneration"] == 2
    platform.delete("FlinkJob", name)
    platform.wait_gone(name)


def test_operator_killed_during_an_upgrade_completes_it_after_restart(platform: Platform):
    """Scenario 5: SIGKILL the operator as soon as the upgrade is in the write-ahead log (status)."""
    name = "e2e-opkill"
    out = start_and_reach_midstream(platform, name)
    args = upgrade_to_v2(platform, name)
    step = platform.wait(name, lambda: platform.status(name)["reconciliation"].get("upgradeStep"), timeout=60,
                         what="the upgrade started")
    platform.operator.kill(signal.SIGKILL)
    killed_at = platform.status(name)
    time.sleep(2)  # the platform goes on without an operator for a moment (the savepoint may complete meanwhile)
    platform.operator.start()
    print(f"\noperator killed in upgrade step {step} "
          f"(status then: {killed_at.get('lifecycleState')}/{killed_at['reconciliation'].get('upgradeStep')})")
    status = platform.wait(name, lambda: upgraded(platform, name, args), timeout=120,
                           what="the upgrade completed by the restarted operator")
    check_upgrade_from_savepoint(platform, name, status, out)
    platform.delete("FlinkJob", name)
    platform.wait_gone(name)
