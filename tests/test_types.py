"""The type contract: mypy --strict holds on the packages pyproject.toml's [tool.mypy] lists.

The README's test command (which CI runs) runs this, so a type error in a strict package fails CI with mypy's own
report. The list ratchets outward: a package joins `packages` and the strict override once
`python -m mypy -p <package>` is clean with it in the override (see the comment above [tool.mypy]).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _mypy_config() -> dict[str, Any]:  # Any: parsed TOML
    with open(ROOT / "pyproject.toml", "rb") as f:
        config: dict[str, Any] = tomllib.load(f)["tool"]["mypy"]
    return config


def _strict_patterns(config: dict[str, Any]) -> set[str]:
    patterns: set[str] = set()
    for override in config.get("overrides", []):
        if override.get("strict"):
            module = override["module"]
            patterns.update([module] if isinstance(module, str) else module)
    return patterns


def _run_mypy(args: list[str], cwd: Path, cache_dir: Path) -> subprocess.CompletedProcess[str]:
    # a cache of this test run's own: several engineers (and CI) may run mypy in one tree at once
    env = {**os.environ, "MYPY_CACHE_DIR": str(cache_dir)}
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def test_strict_packages_type_check(tmp_path: Path) -> None:
    """mypy, configured by pyproject.toml, finds no error in the packages it lists (all of them strict)."""
    result = _run_mypy([], ROOT, tmp_path / "mypy-cache")
    assert result.returncode == 0, "mypy (pyproject.toml [tool.mypy]) reports:\n" + result.stdout + result.stderr


def test_every_checked_package_is_strict_and_exists() -> None:
    """A package listed for checking is also in the strict override (else it would pass on looser rules), and
    names a package that exists (a typo would check nothing)."""
    config = _mypy_config()
    packages = config["packages"]
    assert isinstance(packages, list) and packages, "[tool.mypy] packages is empty"
    strict = _strict_patterns(config)
    for package in packages:
        assert package in strict and f"{package}.*" in strict, (
            f"{package!r} is in [tool.mypy] packages but not in the strict override: add {package!r} and "
            f"'{package}.*' to it"
        )
        roots = [ROOT / p for p in config["mypy_path"]]
        relative = Path(*package.split("."))
        assert any((root / relative / "__init__.py").is_file() for root in roots), (
            f"[tool.mypy] package {package!r} is not found under mypy_path {config['mypy_path']}"
        )


def test_a_strict_package_with_an_untyped_function_fails(tmp_path: Path) -> None:
    """The way this file runs mypy reports a strict violation as a failure (so the test above can fail)."""
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "__init__.py").write_text("def untyped(x):\n    return x\n")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.mypy]\npython_version = "3.11"\npackages = ["probe"]\n\n'
        '[[tool.mypy.overrides]]\nmodule = ["probe", "probe.*"]\nstrict = true\n'
    )
    result = _run_mypy([], tmp_path, tmp_path / "mypy-cache")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "probe/__init__.py:1: error: Function is missing a type annotation" in result.stdout, result.stdout
