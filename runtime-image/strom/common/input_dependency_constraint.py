"""`InputDependencyConstraint` (`pyflink.common.InputDependencyConstraint`): a DataSet-era scheduling hint.

Only `ExecutionConfig.set_default_input_dependency_constraint` takes it; it is recorded and read
back, and Strom's scheduler (all tasks of a streaming job at once) does not consult it.
"""

from __future__ import annotations

from enum import Enum


class InputDependencyConstraint(Enum):
    ANY = 0
    ALL = 1
