"""HA data of a FlinkJob's JobManager: where it is, newer checkpoints it points to, and removing it
(file:// and a real S3 server), as the reconciler does before deploying from a chosen snapshot."""

from __future__ import annotations

import json
from pathlib import Path

from strom_operator.clients.savepoint_disposal import S3Access, remove_directory
from strom_operator.reconcile.ha_data import ha_data_uri, newer_checkpoint, read_checkpoint_pointers
from strom_operator.resources.labels import FlinkJobRef

from tests.engine.s3_server import S3Server
from tests.operator.fakes import make_spec

REF = FlinkJobRef("sums", "streams", "uid-1")


def test_ha_data_lives_next_to_the_checkpoints_under_the_flinkjob_name():
    spec = make_spec(checkpointing={"interval": "10 s", "dir": "s3://bucket/chk/"})
    assert ha_data_uri(REF, spec) == "s3://bucket/chk/_ha/sums"


def test_ha_data_follows_the_users_storage_dir_and_cluster_id():
    spec = make_spec(flinkConfiguration={"high-availability.storageDir": "s3://other/ha",
                                         "high-availability.cluster-id": "team-a"})
    assert ha_data_uri(REF, spec) == "s3://other/ha/team-a"


def test_no_ha_data_without_checkpointing():
    spec = make_spec(checkpointing={"interval": "0 s", "dir": "s3://bucket/chk"})
    assert ha_data_uri(REF, spec) is None


def test_a_newer_checkpoint_of_the_same_job_replaces_the_chosen_one():
    pointers = {"j1": (7, "j1/chk-7"), "j0": (99, "j0/chk-99")}
    assert newer_checkpoint("s3://b/chk/j1/chk-5", "s3://b/chk", pointers) == "s3://b/chk/j1/chk-7"
    assert newer_checkpoint("s3://b/chk/j1/chk-5/_metadata", "s3://b/chk/", pointers) == "s3://b/chk/j1/chk-7"


def test_the_chosen_snapshot_stays_when_nothing_newer_of_its_job_exists():
    pointers = {"j1": (7, "j1/chk-7")}
    assert newer_checkpoint("s3://b/chk/j1/chk-7", "s3://b/chk", pointers) is None
    assert newer_checkpoint("s3://b/chk/j2/chk-3", "s3://b/chk", pointers) is None  # another job
    assert newer_checkpoint("s3://b/sp/savepoint-j1-abc", "s3://b/chk", pointers) is None  # a savepoint
    assert newer_checkpoint(None, "s3://b/chk", pointers) is None  # stateless: nothing to restore


def _plant(root: Path, job_id: str, checkpoint_id: int) -> None:
    job = root / "jobs" / job_id
    job.mkdir(parents=True)
    (job / "jobgraph").write_bytes(b"graph")
    (job / "checkpoint").write_text(json.dumps({"checkpoint_id": checkpoint_id,
                                                "directory": f"{job_id}/chk-{checkpoint_id}"}))


def test_file_ha_data_is_read_then_removed_and_nothing_else(tmp_path: Path):
    ha = tmp_path / "_ha" / "sums"
    _plant(ha, "j1", 4)
    _plant(ha, "j2", 9)
    (ha / "jobs" / "j3").mkdir()  # a submission that never wrote its pointer
    neighbour = tmp_path / "_ha" / "sums-2" / "keep"
    neighbour.parent.mkdir(parents=True)
    neighbour.write_text("another FlinkJob's")
    uri = f"file://{ha}"
    assert read_checkpoint_pointers(uri, S3Access()) == {"j1": (4, "j1/chk-4"), "j2": (9, "j2/chk-9")}
    assert remove_directory(uri, S3Access(), what="high-availability data") == 4
    assert not ha.exists() and neighbour.read_text() == "another FlinkJob's"
    assert remove_directory(uri, S3Access()) == 0  # already gone: no error
    assert read_checkpoint_pointers(uri, S3Access()) == {}


def test_s3_ha_data_is_read_then_removed_and_nothing_else(s3_server: S3Server):
    client = s3_server.client()
    prefix = "ha-test/chk/_ha/sums"
    for job_id, n in (("j1", 4), ("j2", 9)):
        client.put_object(Bucket=s3_server.bucket, Key=f"{prefix}/jobs/{job_id}/jobgraph", Body=b"graph")
        client.put_object(Bucket=s3_server.bucket, Key=f"{prefix}/jobs/{job_id}/checkpoint",
                          Body=json.dumps({"checkpoint_id": n, "directory": f"{job_id}/chk-{n}"}).encode())
    client.put_object(Bucket=s3_server.bucket, Key="ha-test/chk/_ha/sums-2/jobs/x/jobgraph", Body=b"keep")
    access = S3Access(endpoint=s3_server.endpoint, region=s3_server.region, path_style=True,
                      access_key=s3_server.access_key, secret_key=s3_server.secret_key)
    for scheme in ("s3", "s3a"):
        uri = f"{scheme}://{s3_server.bucket}/{prefix}"
        assert read_checkpoint_pointers(uri, access) == {"j1": (4, "j1/chk-4"), "j2": (9, "j2/chk-9")}
    assert remove_directory(f"s3a://{s3_server.bucket}/{prefix}", access) == 4
    left = [o["Key"] for o in client.list_objects_v2(Bucket=s3_server.bucket, Prefix="ha-test/").get("Contents", [])]
    assert left == ["ha-test/chk/_ha/sums-2/jobs/x/jobgraph"]
