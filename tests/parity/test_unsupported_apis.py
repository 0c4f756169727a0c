"""APIs Strom does not provide fail with a Strom error naming what to use; abstract bases refuse an
incomplete subclass when it is instantiated, naming the missing method (not NotImplementedError later)."""

import pytest
from strom.common import Configuration
from strom.common.serialization import DeserializationSchema, SerializationSchema, SimpleStringSchema
from strom.common.unsupported import UnsupportedFeatureError
from strom.datastream.checkpoint_storage import CheckpointStorage, CustomCheckpointStorage
from strom.datastream.connectors.file_system import FileSink, StreamingFileSink
from strom.datastream.state_backend import CustomStateBackend, HashMapStateBackend, StateBackend


@pytest.mark.parametrize(
    ("call", "instead"),
    [
        (lambda: StreamingFileSink.for_bulk_format("/tmp/out", object()), "for_row_format"),
        (lambda: FileSink.for_bulk_format("/tmp/out", object()), "FileSink.for_row_format"),
    ],
)
def test_bulk_formats_are_refused_naming_the_row_format(call, instead):
    with pytest.raises(UnsupportedFeatureError, match=rf"for_bulk_format: .*no bulk .*; use .*{instead}") as info:
        call()
    assert "\n" not in str(info.value)
    assert not isinstance(info.value, NotImplementedError)


@pytest.mark.parametrize(
    ("base", "method"),
    [
        (StateBackend, "_apply"),
        (CheckpointStorage, "_apply"),
        (SerializationSchema, "serialize"),
        (DeserializationSchema, "deserialize"),
    ],
)
def test_an_incomplete_subclass_is_refused_naming_the_missing_method(base, method):
    incomplete = type(f"Incomplete{base.__name__}", (base,), {})
    with pytest.raises(TypeError, match=f"abstract method.*{method}"):
        incomplete()


def test_complete_subclasses_still_work():
    conf = Configuration()
    HashMapStateBackend()._apply(conf)
    assert conf.get_string("state.backend.type", "").lower() == "hashmap"
    schema = SimpleStringSchema()
    assert schema.deserialize(schema.serialize("ü")) == "ü"


def test_java_wrappers_keep_their_own_message():
    with pytest.raises(TypeError, match="Strom runs no JVM: use HashMapStateBackend"):
        CustomStateBackend(object())
    with pytest.raises(TypeError, match="Strom runs no JVM: use FileSystemCheckpointStorage"):
        CustomCheckpointStorage(object())
