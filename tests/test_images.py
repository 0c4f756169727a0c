"""The container images, checked without a container runtime (none runs here): every COPY source
exists in the build context, the entrypoints are the distribution's real console scripts (the ones
the Helm chart and the operator's pod templates run), the images run as a non-root user from a
pinned base, and the install step is the README's `pip install` with extras pyproject.toml defines.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
IMAGES = {"operator": ROOT / "Dockerfile", "runtime": ROOT / "runtime-image" / "Dockerfile"}


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


@pytest.mark.parametrize("image", sorted(IMAGES))
def test_every_copy_source_exists_in_the_build_context(image):
    copies = [args for word, args in instructions(IMAGES[image]) if word in ("COPY", "ADD")]
    assert copies
    for args in copies:
        *sources, _dest = shlex.split(args)
        for source in sources:
            assert not source.startswith("--"), f"{image}: COPY flags are not expected here: {args}"
            assert (ROOT / source).exists(), f"{image}: COPY source {source!r} is not in the build context"


@pytest.mark.parametrize("image", sorted(IMAGES))
def test_base_image_is_pinned_and_the_user_is_not_root(image):
    steps = instructions(IMAGES[image])
    bases = [args for word, args in steps if word == "FROM"]
    assert bases and all(re.fullmatch(r"[\w./-]+:\d+\.\d+\.\d+[\w.-]*(@sha256:[0-9a-f]{64})?", b) for b in bases), bases
    users = [args for word, args in steps if word == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0"), users


@pytest.mark.parametrize("image", sorted(IMAGES))
def test_install_step_uses_extras_the_distribution_defines(image):
    extras = set(pyproject()["project"]["optional-dependencies"])
    runs = " ".join(args for word, args in instructions(IMAGES[image]) if word == "RUN")
    installs = re.findall(r"pip install [^&]*?'\.\[([\w,]+)\]'", runs)
    assert installs, f"{image}: no `pip install '.[extras]'` step"
    for group in installs:
        assert set(group.split(",")) <= extras, f"{image}: unknown extras in {group}"


def test_entrypoints_are_the_console_scripts_the_chart_and_operator_run():
    scripts = pyproject()["project"]["scripts"]
    entry = {name: dict(instructions(path)).get("ENTRYPOINT") for name, path in IMAGES.items()}
    assert yaml.safe_load(entry["operator"]) == ["strom-operator"] and "strom-operator" in scripts
    assert yaml.safe_load(entry["runtime"]) == ["strom"] and "strom" in scripts
    chart = (ROOT / "charts" / "strom-operator" / "templates" / "deployment.yaml").read_text()
    assert 'command: ["strom-operator"]' in chart
    # the engine pods the operator builds run the runtime image's command
    from strom_operator.resources import jobmanager_deployment, taskmanager_deployment

    for module in (jobmanager_deployment, taskmanager_deployment):
        assert '"command": ["strom"]' in Path(module.__file__).read_text()


def test_runtime_image_carries_java_and_the_examples_the_manifests_run():
    runtime = IMAGES["runtime"].read_text()
    assert "openjdk-17-jre-headless" in runtime and "JAVA_HOME=" in runtime
    for manifest in sorted((ROOT / "examples" / "k8s").glob("flinkjob-*.yaml")):
        for doc in yaml.safe_load_all(manifest.read_text()):
            entry = (doc or {}).get("spec", {}).get("job", {}).get("entry", "")
            if entry.startswith("/opt/strom/examples/"):
                assert (ROOT / entry.removeprefix("/opt/strom/")).is_file(), f"{manifest.name}: {entry}"
