"""The README as a newcomer follows it (issue 16): its bash blocks, run in order, work.

Marking, in README.md, on the line before a ```bash block (invisible when rendered):
  <!-- newcomer: run -->             the block runs, in order with the other run blocks, in one bash
                                     process (`set -e`), in a fresh directory holding `examples/`
  <!-- newcomer: skip (why) -->      the block is not run; the reason is required
Every bash block carries one of the two, so a new block is either checked or says why not; that rule
and the reference shape of the blocks are checked in every run. Running the blocks starts Spark and a
session cluster (one to two minutes), so it is behind STROM_NEWCOMER=1:

    STROM_NEWCOMER=1 python -m pytest tests/test_newcomer.py

It runs as a newcomer's clone would: the committed tree (`git archive HEAD`, so uncommitted edits are
not in it) in a fresh directory, with a fresh venv (`python -m venv`, no system site packages) in which
the README's install block runs (`pip install -e .`) and then the Spark section's extra
(`pip install -e '.[spark]'`, for the BATCH block). That works on this machine without the internet:
pip's configuration points at a local index and wheel directory (about 20 s). STROM_NEWCOMER_VENV=0
runs the blocks in the current environment instead. The run fails on a non-zero exit or on 'Traceback'
anywhere in the output. Processes the blocks leave behind (their process group) are killed at the end.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MARK = re.compile(r"^<!-- newcomer: (run|skip \((?P<why>[^)]+)\)) -->$")


@dataclass(frozen=True)
class Block:
    line: int  # 1-based line of the opening fence
    mark: str  # 'run', 'skip' or '' (unmarked)
    code: str


def bash_blocks(text: str) -> list[Block]:
    """The README's ```bash blocks with the marker on the nearest non-blank line above each."""
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```bash":
            above = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            m = MARK.match(above)
            mark = "" if m is None else ("run" if m.group(1) == "run" else "skip")
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            blocks.append(Block(i + 1, mark, "\n".join(lines[i + 1 : end])))
            i = end
        i += 1
    return blocks


def test_every_bash_block_is_marked_run_or_skip_with_a_reason():
    blocks = bash_blocks(README.read_text())
    assert blocks, "no bash blocks found: has the README's fence style changed?"
    unmarked = [b.line for b in blocks if not b.mark]
    assert not unmarked, f"README.md bash blocks at lines {unmarked} lack <!-- newcomer: run --> or skip (why)"
    assert sum(b.mark == "run" for b in blocks) >= 5


def test_the_marking_refuses_a_skip_without_a_reason():
    text = "<!-- newcomer: skip -->\n```bash\nls\n```\n<!-- newcomer: run -->\n\n```bash\npwd\n```\n"
    assert [(b.mark, b.code) for b in bash_blocks(text)] == [("", "ls"), ("run", "pwd")]


def test_no_block_pipes_one_strom_command_into_another():
    """`strom list | strom info JOBID` in a copied block is a pipe, not three commands."""
    for b in bash_blocks(README.read_text()):
        for line in b.code.splitlines():
            assert not re.search(r"\bstrom \w+[^|#]*\|\s*strom\b", line), f"README.md:{b.line}: {line}"


def fresh_clone_and_venv(clone: Path, venv: Path) -> tuple[Path, Path]:
    """The committed tree in `clone` and a new venv with it installed as the README says; the venv's bin."""
    clone.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(clone)], input=archive, check=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    install = next(b for b in bash_blocks(README.read_text()) if b.code.strip().startswith("pip install -e ."))
    for command in (install.code.strip().split()[2:], ["-e", ".[spark]"]):  # README's block, then Spark's extra
        r = subprocess.run(pip + command, cwd=clone, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, f"pip install {' '.join(command)} in a fresh venv failed:\n{r.stderr[-4000:]}"
    return clone, venv / "bin"


@pytest.mark.skipif(os.environ.get("STROM_NEWCOMER") != "1", reason="starts Spark and a cluster: STROM_NEWCOMER=1")
def test_the_readme_commands_run_without_a_traceback(tmp_path):
    blocks = [b for b in bash_blocks(README.read_text()) if b.mark == "run"]
    script = "set -e\n" + "\n".join(f"echo '### README.md:{b.line}'\n{b.code}" for b in blocks) + "\n"
    (tmp_path / "readme.sh").write_text(script)
    if os.environ.get("STROM_NEWCOMER_VENV", "1") == "1":
        clone, bin_dir = fresh_clone_and_venv(tmp_path / "clone", tmp_path / "venv")
        (tmp_path / "examples").symlink_to(clone / "examples")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env.update(PATH=os.pathsep.join([str(bin_dir), env.get("PATH", "")]), VIRTUAL_ENV=str(bin_dir.parent))
        found = subprocess.run(["bash", "-c", "command -v strom; strom --version"], env=env, capture_output=True,
                               text=True, cwd=tmp_path).stdout.splitlines()
        assert found[:1] == [str(bin_dir / "strom")] and found[1].startswith("strom "), found  # the venv's
    else:
        (tmp_path / "examples").symlink_to(ROOT / "examples")
        env = dict(os.environ, PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    proc = subprocess.Popen(["bash", "readme.sh"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=900)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever a failed block left running
        except ProcessLookupError:
            pass
    assert proc.returncode == 0, f"a README block failed (exit {proc.returncode}):\n{output[-6000:]}"
    assert "Traceback" not in output, output
    assert "overrides" not in output, output  # no README command runs in another mode than it says
    # the restored job went on from the savepoint's totals: a user's first window holds 3 or 4 clicks
    # (10 per second, users i % 3), so a total of 4 or less appears once per user unless state was lost
    totals: dict[str, list[int]] = {}
    for user, total in re.findall(r"(user-\d): \d+ clicks in this second, (\d+) in all",
                                  (tmp_path / "taskmanager.out").read_text()):
        totals.setdefault(user, []).append(int(total))
    assert sorted(totals) == ["user-0", "user-1", "user-2"], totals
    assert all(sum(t <= 4 for t in ts) == 1 for ts in totals.values()), totals
