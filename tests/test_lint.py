"""The code base stays `ruff` clean (configuration in pyproject.toml)."""

import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is installed by the [test] extra")
def test_ruff_is_clean():
    result = subprocess.run(["ruff", "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(shutil.which("lint-imports") is None, reason="import-linter is installed by the [test] extra")
def test_layer_contracts_hold():
    """The layering of ../shared/STYLE.md, as import-linter contracts in pyproject.toml."""
    result = subprocess.run(["lint-imports"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
