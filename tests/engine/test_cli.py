"""The `strom` command, run as a real process on small job files written by the test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from strom.cli import RunRequest, UsageError, build_configuration, flatten_config, parse_run_args

# A job that reports what it sees: its argv and the configuration its environment got.
REPORTING_JOB = """
import json, sys
from strom.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
conf = env.get_configuration()
print(json.dumps({
    "argv": sys.argv[1:],
    "parallelism": env.get_parallelism(),
    "buffer_timeout": conf.get("execution.buffer-timeout"),
}))
"""


def strom(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "STROM_CONF_DIR"}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "strom.cli", *args],
        cwd=cwd, env=full_env, capture_output=True, text=True, timeout=60,
    )


def job_file(tmp_path: Path, source: str, name: str = "job.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return str(path)


def report(result: subprocess.CompletedProcess[str]) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_run_executes_a_job_and_prints_its_output(tmp_path):
    job = job_file(tmp_path, """
        from strom.datastream import StreamExecutionEnvironment
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([3, 1, 2]).map(lambda x: x * 10).print()
        env.execute("tens")
    """)
    result = strom("run", job, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == ["10", "20", "30"]


def test_job_args_options_and_precedence_file_then_d_then_parallelism(tmp_path):
    job = job_file(tmp_path, REPORTING_JOB)
    conf = tmp_path / "conf.yaml"
    conf.write_text("parallelism.default: 3\nexecution:\n  buffer-timeout: 250 ms\n")  # flat and nested keys
    r = report(strom("run", job, "--input", "in.txt", "-p", "5", "-D", "parallelism.default=4",
                     "--config", str(conf), "plain", cwd=tmp_path))
    assert r == {"argv": ["--input", "in.txt", "plain"], "parallelism": 5, "buffer_timeout": 250}
    r = report(strom("run", "-Dparallelism.default=4", "--config", str(conf), job, cwd=tmp_path))
    assert r["parallelism"] == 4 and r["buffer_timeout"] == 250
    r = report(strom("run", job, "--", "-p", "9", cwd=tmp_path))
    assert r == {"argv": ["-p", "9"], "parallelism": 1, "buffer_timeout": 100}


def test_config_yaml_in_strom_conf_dir_is_the_default_config_file(tmp_path):
    job = job_file(tmp_path, REPORTING_JOB)
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "config.yaml").write_text("parallelism:\n  default: 2\n")
    r = report(strom("run", job, cwd=tmp_path, env={"STROM_CONF_DIR": str(tmp_path / "conf")}))
    assert r["parallelism"] == 2


def test_a_failing_user_function_exits_non_zero_with_its_traceback(tmp_path):
    job = job_file(tmp_path, """
        from strom.datastream import StreamExecutionEnvironment

        def reject_odd_numbers(x):
            if x % 2:
                raise ValueError(f"odd number {x}")
            return x

        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([2, 4, 5]).map(reject_odd_numbers).print()
        env.execute("failing")
    """)
    result = strom("run", job, cwd=tmp_path)
    assert result.returncode == 1
    assert "reject_odd_numbers" in result.stderr
    assert "ValueError: odd number 5" in result.stderr


def test_an_error_in_the_job_program_itself_is_reported_from_the_job_file(tmp_path):
    job = job_file(tmp_path, """
        def build_pipeline():
            raise RuntimeError("no input configured")
        build_pipeline()
    """)
    result = strom("run", job, cwd=tmp_path)
    assert result.returncode == 1
    assert "build_pipeline" in result.stderr and "RuntimeError: no input configured" in result.stderr
    assert "runpy" not in result.stderr  # the CLI's own frames are trimmed


def test_the_job_directory_is_importable_and_sys_exit_codes_pass_through(tmp_path):
    (tmp_path / "helpers.py").write_text("ANSWER = 42\n")
    job = job_file(tmp_path, "import sys, helpers\nsys.exit(0 if helpers.ANSWER == 42 else 7)\n")
    assert strom("run", job, cwd=tmp_path / "..").returncode == 0
    job = job_file(tmp_path, "import sys\nsys.exit(3)\n", name="three.py")
    assert strom("run", job, cwd=tmp_path).returncode == 3


def test_unknown_d_key_fails_fast_naming_the_key_and_known_keys(tmp_path):
    job = job_file(tmp_path, "raise SystemExit('the job must not run')\n")
    result = strom("run", job, "-D", "pipeline.max-paralelism=4", cwd=tmp_path)
    assert result.returncode == 2
    assert "pipeline.max-paralelism" in result.stderr and "pipeline.max-parallelism" in result.stderr


def test_ill_typed_config_file_value_names_the_key_and_the_expected_values(tmp_path):
    job = job_file(tmp_path, "raise SystemExit('the job must not run')\n")
    conf = tmp_path / "config.yaml"
    conf.write_text("execution:\n  runtime-mode: SOMETIMES\n")
    result = strom("run", job, "--config", str(conf), cwd=tmp_path)
    assert result.returncode == 2
    assert "execution.runtime-mode" in result.stderr and "STREAMING" in result.stderr


def test_version_and_help(tmp_path):
    from strom import __version__

    v = strom("--version", cwd=tmp_path)
    assert v.returncode == 0 and v.stdout.strip() == f"strom {__version__}"
    h = strom("--help", cwd=tmp_path)
    assert h.returncode == 0 and "usage: strom" in h.stdout
    run_help = strom("run", "--help", cwd=tmp_path)
    assert run_help.returncode == 0 and "strom run JOB.py" in run_help.stdout and "--parallelism" in run_help.stdout
    missing = strom("run", cwd=tmp_path)
    assert missing.returncode == 2 and "job file" in missing.stderr


# -- pure parts -------------------------------------------------------------------------------


def test_parse_run_args_separates_strom_options_from_job_arguments():
    req = parse_run_args(["-p", "2", "job.py", "--out", "x", "-Da=b", "--config=c.yaml", "--", "-D", "y"])
    assert req == RunRequest("job.py", ["--out", "x", "-D", "y"], [("a", "b")], "2", "c.yaml")
    with pytest.raises(UsageError, match="key=value"):
        parse_run_args(["job.py", "-D", "novalue"])
    with pytest.raises(UsageError, match="expects a value"):
        parse_run_args(["job.py", "-p"])


def test_flatten_config_makes_dotted_keys_but_keeps_map_typed_values():
    tree = {"a": {"b": {"c": 1}}, "pipeline": {"jobvertex-parallelism-overrides": {"v1": 2}}, "x.y": "z"}
    assert flatten_config(tree) == {
        "a.b.c": 1,
        "pipeline.jobvertex-parallelism-overrides": {"v1": 2},
        "x.y": "z",
    }


def test_build_configuration_layers_sources_in_order(tmp_path):
    conf_file = tmp_path / "c.yaml"
    conf_file.write_text("parallelism.default: 3\npipeline.name: from-file\n")
    req = RunRequest("job.py", [], [("pipeline.name", "from-d")], None, str(conf_file))
    conf = build_configuration(req, {})
    assert conf.get("parallelism.default") == 3 and conf.get("pipeline.name") == "from-d"
