"""BATCH mode partitions keys by the same key groups as STREAMING, so it refuses the same keys: one whose
hash would differ between Spark's Python workers fails the job naming the key selector (issue 17)."""

import pytest
from strom.batch.plan import StageInput, StageSpec
from strom.batch.routing import BatchRouter
from strom.common.key_groups import UnstableKeyError
from strom.datastream.functions import as_key_selector

from tests.batch.batch_testing import run_batch


class Opaque:
    """No __eq__: every instance is its own key, and its repr holds its address."""

    def __init__(self, name):
        self.name = name


def by_opaque_name(value):
    return Opaque(value)


def _consumer() -> StageSpec:
    return StageSpec(
        vertex_id="v", name="Keyed Reduce", parallelism=3, max_parallelism=128, nodes=[], wires={}, inputs=[],
        config=None,
    )


def test_the_hash_router_refuses_an_identity_key_naming_selector_and_stage():
    selector = as_key_selector(by_opaque_name)
    inp = StageInput(route=0, input_index=1, partitioner="hash", producer_parallelism=2, key_selector=selector)
    router = BatchRouter(inp, _consumer(), 0)
    with pytest.raises(UnstableKeyError, match=r"key selector by_opaque_name \(.*\) of 'Keyed Reduce'.*identity"):
        router.targets(["a", "b"])


@pytest.mark.usefixtures("spark")
def test_a_batch_job_keyed_by_identity_objects_fails_with_the_selector_named():
    from strom.runtime.local_executor import JobExecutionError

    with pytest.raises(JobExecutionError, match=r"key selector by_opaque_name \(test_batch_key_stability.py:\d+\)"):
        run_batch(lambda env: env.from_collection(["a", "b", "a"]).key_by(by_opaque_name).reduce(lambda a, b: a))
