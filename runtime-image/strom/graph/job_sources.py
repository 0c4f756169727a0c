"""The source text of a job's own files, carried with its graph, so that a traceback raised on a
TaskManager shows the user's source lines as it does in the process that ran the job file.

Functions of the job file (and of modules cloudpickle ships by value) travel as code objects: their
`co_filename` is the path the client ran (often relative, e.g. 'job.py'), which a TaskManager in
another directory or on another host cannot open, so its tracebacks would name the file and line
but show no source line. The client records the text of those files in the graph
(`job_source_files`); a slot process puts it into `linecache` under the same names before it runs
any task (`register_job_sources`). Entries without an mtime are never dropped by
`linecache.checkcache`, and they win over a different file of the same name on the TaskManager,
which is right: the code that runs is the code that was submitted.
"""

from __future__ import annotations

import linecache
import os
import sys
from collections.abc import Mapping

MAX_SOURCE_BYTES = 1 << 20  # a job file larger than this travels without its text


def job_source_files() -> dict[str, str]:
    """co_filename -> source text of the running `__main__` file (the job file) and of modules
    cloudpickle pickles by value; files that cannot be read are left out."""
    files: list[str] = []
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if isinstance(main_file, str):
        files.append(main_file)
    by_value = getattr(sys.modules.get("cloudpickle.cloudpickle"), "_PICKLE_BY_VALUE_MODULES", ())
    for name in sorted(by_value):
        module_file = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(module_file, str):
            files.append(module_file)
    sources: dict[str, str] = {}
    for filename in files:
        try:
            if os.path.getsize(filename) > MAX_SOURCE_BYTES:
                continue
            with open(filename, encoding="utf-8") as f:
                sources[filename] = f.read()
        except (OSError, UnicodeDecodeError):
            continue
    return sources


def register_job_sources(sources: Mapping[str, str]) -> None:
    """Make `linecache` (hence `traceback`) answer source lines of the job's files from `sources`."""
    for filename, text in sources.items():
        lines = text.splitlines(keepends=True)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        linecache.cache[filename] = (len(text), None, lines, filename)
