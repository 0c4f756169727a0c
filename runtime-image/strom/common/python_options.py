"""Flink's `python.*` keys: the Python dependencies a job ships to its TaskManagers.

Declared here, as a group, and registered in the option registry by `strom.common` importing this
module. Values are written as Flink writes them: `python.files` and `python.archives` are comma-separated
lists (an archive may name its target directory after a '#'), `python.requirements` is a requirements
file optionally followed by '#' and a cache directory of packages for offline installs. What they mean
at run time is `strom.common.python_dependencies` (the client side) and `strom.common.python_environment`
(where the graph is unpickled).
"""

from __future__ import annotations

from strom.common.config_options import option

PYTHON_FILES = option(
    "python.files", "str", "",
    "Comma-separated .py files, .zip/.egg/.whl files or directories put on the sys.path of the job's Python "
    "functions on every TaskManager (env.add_python_file).",
)
PYTHON_ARCHIVES = option(
    "python.archives", "str", "",
    "Comma-separated archives (zip, tar, tar.gz), each 'path' or 'path#target_dir', extracted into the job's "
    "working directory on every TaskManager (env.add_python_archive).",
)
PYTHON_REQUIREMENTS = option(
    "python.requirements", "str", "",
    "A requirements file, optionally '#cache_dir' of packages to install offline from, installed with pip into "
    "the job's own directory on every TaskManager (env.set_python_requirements).",
)
PYTHON_EXECUTABLE = option(
    "python.executable", "str", "",
    "Python interpreter of the job's functions on TaskManagers (env.set_python_executable); empty = the "
    "TaskManager's. Another interpreter must be the same Python major.minor: its site-packages are added.",
)
PYTHON_CLIENT_EXECUTABLE = option(
    "python.client.executable", "str", "",
    "Python interpreter of the client that runs the job's program; empty = the one running it. Recorded: "
    "the program runs in the interpreter that started it.",
)

# How Python functions that work on many rows at once (pandas UDFs) are fed: rows are bundled up to
# bundle.size or for bundle.time ms (a bundle is also flushed before every watermark and checkpoint barrier),
# and a function receives at most arrow.batch.size rows per call (capped at bundle.size, as PyFlink caps it)
PYTHON_ARROW_BATCH_SIZE = option(
    "python.fn-execution.arrow.batch.size", "int", 10000,
    "Most rows a pandas UDF receives per call (one Arrow batch).", minimum=1,
)
PYTHON_BUNDLE_SIZE = option(
    "python.fn-execution.bundle.size", "int", 100000,
    "Most rows buffered for pandas UDFs before they are called.", minimum=1,
)
PYTHON_BUNDLE_TIME = option(
    "python.fn-execution.bundle.time", "int", 1000,
    "Milliseconds rows may wait in a pandas UDF's bundle before it is flushed.", minimum=1,
)
