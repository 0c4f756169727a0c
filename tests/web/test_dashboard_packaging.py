"""Every dashboard file is package data: a wheel (or `pip install .`) ships the whole dashboard.

setuptools packs only the non-Python files `[tool.setuptools.package-data]` names; a new module or
vendored file under strom/web that no pattern matches would be served from a checkout and missing
(404, a broken page) from an installed wheel. Checked against pyproject.toml's patterns, no build needed.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

import strom.web
from strom.runtime.jobmanager.web_dashboard import dashboard_files

ROOT = Path(__file__).resolve().parents[2]
WEB = Path(strom.web.__file__).parent


def _patterns() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return list(config["tool"]["setuptools"]["package-data"]["strom.web"])


def test_every_served_dashboard_file_is_package_data() -> None:
    served = set(dashboard_files())
    assert {"index.html", "app.js", "vendor/dagre.esm.js"} <= served
    unpackaged = sorted(name for name in served if not any(fnmatch.fnmatch(name, p) for p in _patterns()))
    assert not unpackaged, f"add patterns for {unpackaged} to [tool.setuptools.package-data] 'strom.web'"


def test_every_module_the_page_imports_is_served() -> None:
    """Each `import ... from "./x.js"` of the shipped modules resolves to a served file (a typo is a blank page)."""
    served = set(dashboard_files())
    missing = []
    for name in (n for n in served if n.endswith(".js") and not n.startswith("vendor/")):
        folder = Path(name).parent
        for target in re.findall(r'from\s+"(\.{1,2}/[^"]+)"', (WEB / name).read_text()):
            resolved = (folder / target).as_posix()
            parts: list[str] = []
            for part in resolved.split("/"):
                if part == "..":
                    parts.pop()
                elif part not in ("", "."):
                    parts.append(part)
            if "/".join(parts) not in served:
                missing.append(f"{name} imports {target}")
    assert not missing, missing
