"""The session's `sql-client.*` options: Flink keeps them in the SQL Client, not in the job's configuration,
so `SET 'sql-client.…'` is answered here and never reaches the TableEnvironment (whose registry refuses keys
it does not know). Names, defaults and values are Flink's."""

from __future__ import annotations

from dataclasses import dataclass

RESULT_MODE = "sql-client.execution.result-mode"
MAX_TABLE_RESULT_ROWS = "sql-client.execution.max-table-result.rows"
MAX_COLUMN_WIDTH = "sql-client.display.max-column-width"
VERBOSE = "sql-client.verbose"
RESULT_MODES = ("table", "changelog", "tableau")

DEFAULTS = {RESULT_MODE: "table", MAX_TABLE_RESULT_ROWS: "1000000", MAX_COLUMN_WIDTH: "30", VERBOSE: "false"}


def is_client_key(key: str) -> bool:
    return key.startswith("sql-client.")


def validate(key: str, value: str) -> str:
    """The value as stored (result modes lower case), or ValueError naming the key and what is allowed."""
    if key not in DEFAULTS:
        raise ValueError(f"unknown SQL client option {key!r}; the client's options are {', '.join(sorted(DEFAULTS))}")
    if key == RESULT_MODE:
        if value.lower() not in RESULT_MODES:
            raise ValueError(f"invalid value {value!r} for {key!r}: expected one of table, changelog, tableau")
        return value.lower()
    if key in (MAX_TABLE_RESULT_ROWS, MAX_COLUMN_WIDTH):
        if not value.strip().isdigit() or int(value) < 1:
            raise ValueError(f"invalid value {value!r} for {key!r}: expected a positive integer")
        return value.strip()
    if value.lower() not in ("true", "false"):
        raise ValueError(f"invalid value {value!r} for {key!r}: expected true or false")
    return value.lower()


@dataclass(slots=True)
class ClientOptions:
    """What the session set; unset keys read as Flink's defaults."""

    values: dict[str, str]

    @staticmethod
    def empty() -> ClientOptions:
        return ClientOptions({})

    def set(self, key: str, value: str) -> None:
        self.values[key] = validate(key, value)

    def reset(self, key: str | None = None) -> None:
        if key is None:
            self.values.clear()
        else:
            self.values.pop(key, None)

    def get(self, key: str) -> str:
        return self.values.get(key, DEFAULTS[key])

    @property
    def result_mode(self) -> str:
        return self.get(RESULT_MODE)

    @property
    def max_rows(self) -> int:
        return int(self.get(MAX_TABLE_RESULT_ROWS))

    @property
    def max_column_width(self) -> int:
        return int(self.get(MAX_COLUMN_WIDTH))

    @property
    def verbose(self) -> bool:
        return self.get(VERBOSE) == "true"
