import pytest
from strom.common.config_options import ConfigError, parse_duration_ms
from strom.common.configuration import Configuration
from strom.datastream import StreamExecutionEnvironment


def test_unknown_key_names_the_key():
    with pytest.raises(ConfigError, match="'parallelism.defualt'"):
        Configuration({"parallelism.defualt": 2})


def test_ill_typed_value_names_key_and_expectation():
    with pytest.raises(ConfigError, match="'parallelism.default'.*integer"):
        Configuration({"parallelism.default": "two"})
    with pytest.raises(ConfigError, match="'execution.runtime-mode'.*STREAMING, BATCH, AUTOMATIC"):
        Configuration({"execution.runtime-mode": "FAST"})
    with pytest.raises(ConfigError, match="duration such as"):
        Configuration({"execution.buffer-timeout": "3x"})


def test_durations_parse_like_flink():
    assert parse_duration_ms("10 s") == 10_000
    assert parse_duration_ms("500ms") == 500
    assert parse_duration_ms("1 min") == 60_000
    assert parse_duration_ms(250) == 250


def test_defaults_are_flinks():
    c = Configuration()
    assert c.get("parallelism.default") == 1
    assert c.get("pipeline.auto-watermark-interval") == 200
    assert c.get("execution.buffer-timeout") == 100
    assert c.get("rest.port") == 8081


def test_environment_takes_configuration():
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({"parallelism.default": 3}))
    assert env.get_parallelism() == 3
    env.set_parallelism(2)
    assert env.get_parallelism() == 2
