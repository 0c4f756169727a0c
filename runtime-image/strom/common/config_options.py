"""The registry of typed configuration options, with Flink's keys and defaults.

Every option the engine reads is declared here once, with its type, default and
validation. An unknown key or an ill-typed value fails fast with an error naming the
key and what would be right.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from strom.common.port_ranges import parse_port_range


class ConfigError(ValueError):
    """An unknown configuration key or a value of the wrong type or range."""


_DURATION_UNITS = {
    "ms": 1,
    "milli": 1,
    "millis": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1000,
    "sec": 1000,
    "secs": 1000,
    "second": 1000,
    "seconds": 1000,
    "min": 60_000,
    "m": 60_000,
    "mins": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_duration_ms(value: Any) -> int:
    """'10 s', '500ms', '1 min', or a bare number (milliseconds, as Flink reads it)."""
    if isinstance(value, bool):
        raise ValueError("a boolean is not a duration")
    if isinstance(value, int | float):
        return int(value)
    if hasattr(value, "millis"):
        return int(value.millis)
    m = _DURATION_RE.match(str(value))
    if not m or m.group(2).lower() not in _DURATION_UNITS and m.group(2) != "":
        raise ValueError("not a duration")
    unit = m.group(2).lower() or "ms"
    return int(float(m.group(1)) * _DURATION_UNITS[unit])


_MEMORY_UNITS = {
    "": 1,
    "b": 1,
    "bytes": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "kibibytes": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "mebibytes": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "gibibytes": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
    "tebibytes": 1 << 40,
}
_MEMORY_RE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")


def parse_memory_size(value: Any) -> int:
    """Flink's MemorySize syntax: '32kb', '64 mb', '1g', or a bare number of bytes (units are powers of 1024)."""
    if isinstance(value, bool):
        raise ValueError("a boolean is not a memory size")
    if isinstance(value, int):
        return value
    m = _MEMORY_RE.match(str(value))
    if not m or m.group(2).lower() not in _MEMORY_UNITS:
        raise ValueError("not a memory size")
    return int(m.group(1)) * _MEMORY_UNITS[m.group(2).lower()]


def format_memory_size(n: int) -> str:
    """`n` bytes in the largest unit that divides it ('32 kb', '64 mb', '1000 bytes')."""
    for unit, size in (("tb", 1 << 40), ("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    s = str(value).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise ValueError("not a boolean")


def _parse_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return int(str(value).strip())


def _parse_map(value: Any) -> dict[str, str]:
    """Flink's map syntax 'k1:v1,k2:v2' or a dict."""
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    out: dict[str, str] = {}
    for part in str(value).split(","):
        if not part.strip():
            continue
        k, sep, v = part.partition(":")
        if not sep:
            raise ValueError("not a map")
        out[k.strip()] = v.strip()
    return out


T = TypeVar("T")


class ConfigLookup(Protocol):
    """Where option readers look a key up: a `Configuration` or a plain mapping of raw values."""

    def get(self, key: str, /) -> Any: ...  # Any: a raw value, before an option parses it


def read_option(config: ConfigLookup | None, opt: ConfigOption[T]) -> T:
    """The parsed value of `opt` in a `Configuration`, a mapping or None (then the default).

    Parsed here because a configuration built before `opt` was registered keeps values of the namespaces
    the registry passes through (`s3.*`, `state.*`, ...) unparsed.
    """
    raw = config.get(opt.key) if config is not None else None
    return opt.default if raw is None else opt.parse(raw)


@dataclass(frozen=True, slots=True)
class ConfigOption(Generic[T]):
    """One option; `T` is the type of its parsed value (and of its default), what `Configuration.get` returns."""

    key: str
    type: str  # int | bool | str | duration | enum | map | ports | memory
    default: T
    description: str
    allowed: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    power_of_two: bool = False  # memory sizes that must be a power of two (Flink's segment size)
    deprecated_keys: tuple[str, ...] = field(default=())

    def expected(self) -> str:
        return {
            "int": _integer_range(self.minimum, self.maximum),
            "bool": "true or false",
            "str": "a string",
            "duration": "a duration such as '10 s' or '500 ms'",
            "enum": "one of " + ", ".join(self.allowed),
            "map": "a map such as 'k1:v1,k2:v2'",
            "ports": "a port (0-65535), a range such as 9250-9260, or a comma-separated list of both",
            "memory": "a memory size such as '32 kb' or '64 mb'"
            + (f" of at least {format_memory_size(self.minimum)}" if self.minimum is not None else "")
            + (", a power of two" if self.power_of_two else ""),
        }[self.type]

    def parse(self, value: Any) -> T:  # Any: a value as a user or a config file wrote it
        parsers: dict[str, Callable[[Any], Any]] = {
            "int": _parse_int,
            "bool": _parse_bool,
            "str": str,
            "duration": parse_duration_ms,
            "map": _parse_map,
            "ports": parse_port_range,
            "memory": parse_memory_size,
            "enum": lambda v: str(v).strip().upper().replace("-", "_"),
        }
        try:
            parsed = parsers[self.type](value)
        except (ValueError, TypeError):
            raise ConfigError(f"invalid value {value!r} for {self.key!r}: expected {self.expected()}") from None
        if self.type == "enum" and parsed not in self.allowed:
            raise ConfigError(f"invalid value {value!r} for {self.key!r}: expected {self.expected()}")
        out_of_range = (self.minimum is not None and parsed < self.minimum) or (
            self.maximum is not None and parsed > self.maximum
        )
        if out_of_range or (self.power_of_two and parsed & (parsed - 1)):
            raise ConfigError(f"invalid value {value!r} for {self.key!r}: expected {self.expected()}")
        result: T = parsed  # the parser chosen by `type` yields T (the registry pairs each type with its default)
        return result


def _integer_range(minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f"an integer from {minimum} to {maximum}"
    return "an integer" + (f" >= {minimum}" if minimum is not None else "")


def option_for_deprecated_key(key: str) -> ConfigOption[Any] | None:
    """The option whose deprecated key (one Flink still accepts) `key` is, or None."""
    for opt in OPTIONS.values():
        if key in opt.deprecated_keys:
            return opt
    return None


MAX_PORT = 65535  # a TCP port is 16 bits: a larger one fails deep inside bind() (OverflowError)

OPTIONS: dict[str, ConfigOption[Any]] = {}  # Any: options of every value type live in one registry


def option(key: str, type: str, default: T, description: str, **kw: Any) -> ConfigOption[T]:
    """Declare and register an option; its value type is its default's (`kw`: ConfigOption's validation fields)."""
    opt = ConfigOption(key, type, default, description, **kw)
    OPTIONS[key] = opt
    return opt


# -- pipeline / execution -------------------------------------------------------------------
PARALLELISM = option("parallelism.default", "int", 1, "Default parallelism of operators.", minimum=1)
MAX_PARALLELISM = option(
    "pipeline.max-parallelism", "int", -1, "Number of key groups; -1 derives it from parallelism (>= 128)."
)
PIPELINE_NAME = option("pipeline.name", "str", "", "Job name.")
AUTO_WATERMARK_INTERVAL = option(
    "pipeline.auto-watermark-interval", "duration", 200, "Period of periodic watermark emission; 0 disables."
)
TABLE_STATE_TTL = option(
    "table.exec.state.ttl", "duration", 0,
    "Table API & SQL: how long a key's idle state (regular join rows) is kept; 0 keeps it forever.",
)
TABLE_LOCAL_TIME_ZONE = option(
    "table.local-time-zone", "str", "default",
    "Table API & SQL: the session time zone for TIMESTAMP_LTZ display and CURRENT_TIMESTAMP, LOCALTIMESTAMP, "
    "UNIX_TIMESTAMP, FROM_UNIXTIME ('default' = the process's zone, a region id such as 'Asia/Shanghai', 'UTC', "
    "or 'GMT+08:00').",
)
TABLE_DML_SYNC = option(
    "table.dml-sync", "bool", False,
    "Table API & SQL: execute_sql of INSERT waits for its job to finish (Flink's SQL client option).",
)
TABLE_COLUMNAR_ENABLED = option(
    "table.exec.columnar.enabled", "bool", False,
    "Table API & SQL (Strom's own key, beside Flink's table.exec.* execution switches): evaluate a Calc's "
    "projection and filter per batch with pyarrow.compute where every expression has a kernel with Flink's "
    "semantics (strom.table.planner.columnar_calc); results are identical either way, only the speed differs.",
)
TABLE_BATCH_RUNNER = option(
    "table.exec.batch.runner", "enum", "SPARK",
    "Table API & SQL in batch mode (Strom's own key; Flink's batch planner has one runtime): 'spark' runs a bounded "
    "plan as Spark SQL through PySpark (strom.batch.sql; a plan it cannot translate runs on Strom, logged), "
    "'strom' runs it bounded on Strom's streaming runtime.",
    allowed=("SPARK", "STROM"),
)
TABLE_MINI_BATCH_ENABLED = option(
    "table.exec.mini-batch.enabled", "bool", False,
    "Table API & SQL: buffer input for aggregations (performance only; Strom's operators already work on batches).",
)
TABLE_MINI_BATCH_LATENCY = option(
    "table.exec.mini-batch.allow-latency", "duration", 0,
    "Table API & SQL: the mini-batch buffering latency (accepted; performance only).",
)
TABLE_MINI_BATCH_SIZE = option(
    "table.exec.mini-batch.size", "int", -1, "Table API & SQL: rows per mini-batch (accepted; performance only).",
)
TABLE_SINK_UPSERT_MATERIALIZE = option(
    "table.exec.sink.upsert-materialize", "str", "AUTO",
    "Table API & SQL: NONE, AUTO or FORCE: whether a SinkUpsertMaterializer keyed by the sink's primary key "
    "reorders an update stream whose upsert key differs from that key (AUTO: when needed, as Flink).",
)
OPERATOR_CHAINING = option(
    "pipeline.operator-chaining.enabled",
    "bool",
    True,
    "Chain operators.",
    deprecated_keys=("pipeline.operator-chaining",),
)
GLOBAL_JOB_PARAMETERS: ConfigOption[dict[str, str]] = option(
    "pipeline.global-job-parameters",
    "map",
    {},
    "Job parameters every function reads with get_runtime_context().get_job_parameter(key, default).",
)
VERTEX_PARALLELISM_OVERRIDES: ConfigOption[dict[str, str]] = option(
    "pipeline.jobvertex-parallelism-overrides", "map", {}, "Per job vertex parallelism overrides."
)
RUNTIME_MODE = option(
    "execution.runtime-mode", "enum", "STREAMING", "Runtime mode.", allowed=("STREAMING", "BATCH", "AUTOMATIC")
)
BUFFER_TIMEOUT = option(
    "execution.buffer-timeout", "duration", 100, "Longest time a partly filled buffer waits before it is sent."
)
BUFFER_RECORDS = option(
    "strom.network.buffer-records",
    "int",
    1024,
    "Most records per network buffer and per source batch; buffers are cut at taskmanager.memory.segment-size "
    "bytes first.",
    minimum=1,
)
SEGMENT_SIZE = option(
    "taskmanager.memory.segment-size",
    "memory",
    32 * 1024,
    "Size of a network buffer; serialized records fill buffers, a record larger than a buffer spans several.",
    minimum=4 * 1024,
    power_of_two=True,
    deprecated_keys=("taskmanager.network.memory.segment-size",),
)
NETWORK_MEMORY_MAX = option(
    "taskmanager.memory.network.max",
    "memory",
    64 * 1024 * 1024,
    "Network memory of one slot worker process (Flink: of a TaskManager): the buffers of its subtasks' input "
    "gates and output channels; a deployment that needs more is refused.",
    minimum=4 * 1024,
    deprecated_keys=("taskmanager.network.memory.max",),
)
PROCESS_MEMORY = option(
    "taskmanager.memory.process.size",
    "memory",
    0,
    "Total memory of a TaskManager (Flink's key; the container's memory on Kubernetes). With heap state, each "
    "slot process may use this divided by taskmanager.numberOfTaskSlots; past it the task fails with a one-line "
    "error instead of the machine swapping. 0: 90% of the machine's (or the container's) memory.",
    minimum=0,
)
TASK_HEAP_MEMORY = option(
    "taskmanager.memory.task.heap.size",
    "memory",
    0,
    "Memory for tasks' heap state and objects (Flink's key); when set, it bounds each slot process with heap "
    "state (divided by taskmanager.numberOfTaskSlots) instead of taskmanager.memory.process.size. 0: not set.",
    minimum=0,
)
BUFFERS_PER_CHANNEL = option(
    "taskmanager.network.memory.buffers-per-channel",
    "int",
    2,
    "Exclusive buffers (credits) per input channel.",
    minimum=1,
)
FLOATING_BUFFERS = option(
    "taskmanager.network.memory.floating-buffers-per-gate",
    "int",
    8,
    "Buffers per input gate shared by its channels (spread evenly over them).",
    minimum=0,
)
OBJECT_REUSE = option(
    "pipeline.object-reuse", "bool", False, "Accepted for compatibility; Python objects are not copied."
)

# -- checkpointing / state ------------------------------------------------------------------
CHECKPOINT_INTERVAL = option("execution.checkpointing.interval", "duration", 0, "Checkpoint interval; 0 = off.")
CHECKPOINT_MODE = option(
    "execution.checkpointing.mode",
    "enum",
    "EXACTLY_ONCE",
    "Checkpointing mode.",
    allowed=("EXACTLY_ONCE", "AT_LEAST_ONCE"),
)
UNALIGNED_CHECKPOINTS = option(
    "execution.checkpointing.unaligned.enabled",
    "bool",
    False,
    "Unaligned checkpoints: barriers overtake in-flight buffers, which are stored with the checkpoint "
    "(EXACTLY_ONCE only; savepoints stay aligned).",
)
ALIGNED_CHECKPOINT_TIMEOUT = option(
    "execution.checkpointing.aligned-checkpoint-timeout",
    "duration",
    0,
    "With unaligned checkpoints: a checkpoint starts aligned and switches to unaligned once alignment has taken "
    "this long; 0 = unaligned from the start.",
    deprecated_keys=("execution.checkpointing.alignment-timeout",),
)
STATE_BACKEND = option(
    "state.backend.type", "enum", "HASHMAP", "State backend.", allowed=("HASHMAP", "ROCKSDB"),
    deprecated_keys=("state.backend",),
)
CHECKPOINTS_DIR = option(
    "state.checkpoints.dir", "str", "", "Checkpoint storage URI.", deprecated_keys=("state.backend.fs.checkpointdir",)
)
SAVEPOINTS_DIR = option(
    "state.savepoints.dir",
    "str",
    "",
    "Default savepoint directory.",
    deprecated_keys=("savepoints.state.backend.fs.dir",),
)
SAVEPOINT_PATH = option(
    "execution.savepoint.path", "str", "", "Savepoint (or retained checkpoint) the job restores from at its start."
)
SAVEPOINT_IGNORE_UNCLAIMED_STATE = option(
    "execution.savepoint.ignore-unclaimed-state",
    "bool",
    False,
    "Restore even when the savepoint holds state of an operator uid the job no longer has.",
)

# -- failover -------------------------------------------------------------------------------
RESTART_STRATEGY = option(
    "restart-strategy.type",
    "enum",
    "NONE",
    "Restart strategy.",
    allowed=("NONE", "DISABLE", "OFF", "FIXED_DELAY", "FIXEDDELAY", "EXPONENTIAL_DELAY", "FAILURE_RATE"),
    deprecated_keys=("restart-strategy",),
)
RESTART_ATTEMPTS = option("restart-strategy.fixed-delay.attempts", "int", 1, "Restart attempts.", minimum=0)
RESTART_DELAY = option("restart-strategy.fixed-delay.delay", "duration", 1000, "Delay between restarts.")

# -- cluster --------------------------------------------------------------------------------
TASK_SLOTS = option("taskmanager.numberOfTaskSlots", "int", 1, "Slots per TaskManager.", minimum=1)
REST_PORT = option(
    "rest.port",
    "int",
    8081,
    "REST port; 0 picks a free one.",
    minimum=0,
    maximum=MAX_PORT,
    deprecated_keys=("web.port",),
)
RPC_PORT = option(
    "jobmanager.rpc.port", "int", 6123, "JobManager RPC port; 0 picks a free one.", minimum=0, maximum=MAX_PORT
)
DATA_PORT = option(
    "taskmanager.data.port",
    "int",
    0,
    "Port of slot 0's data server (slot i: port + i); 0 picks free ones.",
    minimum=0,
    maximum=MAX_PORT,
)
# Flink's PrometheusReporter port: one port or a range ('9250-9260'); the first free one is bound
PROM_PORT = option("metrics.reporter.prom.port", "ports", "9249", "Prometheus exporter port or port range.")

# -- log files (strom.runtime.log_files): Flink's keys; unset = stderr only ---------------------------
LOG_DIR = option("env.log.dir", "str", "", "Directory of the processes' .log and .out files ('' = stderr only).")
LOG_FILE = option("log.file", "str", "", "This process's log file (over env.log.dir); its stdout: same name, .out.")

# -- bookkeeping: how much of the past the JobManager keeps (Flink's keys and defaults) ----------------
EXCEPTION_HISTORY_SIZE = option(
    "web.exception-history-size", "int", 16, "Failures each job keeps for /jobs/:id/exceptions (newest).", minimum=1
)
JOBSTORE_EXPIRATION_TIME = option(
    "jobstore.expiration-time", "int", 3600, "Seconds a finished job stays in the job store (as Flink: seconds).",
    minimum=0,
)
# Flink's default is Integer.MAX_VALUE because its job store spills to disk; ours is in memory (each job
# keeps its graph and payload), so the count is bounded too. 2147483647 gives Flink's behaviour.
JOBSTORE_MAX_CAPACITY = option(
    "jobstore.max-capacity", "int", 1000, "Finished jobs the job store keeps at most (oldest dropped first).", minimum=0
)
REST_ASYNC_STORE_DURATION = option(
    "rest.async.store-duration",
    "duration",
    300_000,
    "How long the result of a completed savepoint or savepoint-disposal operation can be read.",
)

# -- addresses (Flink's keys): where a process is reached, and what it binds ----------------------
# "" means unset: the default is derived (see the descriptions), as Flink does.
RPC_ADDRESS = option(
    "jobmanager.rpc.address",
    "str",
    "127.0.0.1",
    "Where TaskManagers reach the JobManager's RPC endpoint (on Kubernetes: the JobManager Service's name).",
)
JOBMANAGER_BIND_HOST = option(
    "jobmanager.bind-host",
    "str",
    "",
    "Address the JobManager's RPC endpoint binds; unset = jobmanager.rpc.address (0.0.0.0 = every interface).",
)
REST_ADDRESS = option("rest.address", "str", "127.0.0.1", "Where clients reach the REST endpoint.")
WEB_SUBMIT_ENABLE = option(
    "web.submit.enable",
    "bool",
    True,
    "Whether POST /jobs accepts job submissions (a submission runs the submitter's code in the JobManager); "
    "unset = true in session mode, false in application mode (--job).",
)
# Flink's dashboard switches (the dashboard reads them from GET /config; the REST API itself is unchanged)
WEB_CANCEL_ENABLE = option("web.cancel.enable", "bool", True, "Whether the web dashboard offers to cancel jobs.")
WEB_REFRESH_INTERVAL = option(
    "web.refresh-interval", "int", 3000, "Milliseconds between the web dashboard's refreshes.", minimum=100
)
REST_BIND_ADDRESS = option(
    "rest.bind-address", "str", "", "Address the REST endpoint binds; unset = rest.address (0.0.0.0 = every interface)."
)
TASKMANAGER_HOST = option(
    "taskmanager.host",
    "str",
    "",
    "Address a TaskManager advertises for its data ports (on Kubernetes: the pod IP); unset = this host's address "
    "on its route to jobmanager.rpc.address (127.0.0.1 for a local JobManager).",
)
TASKMANAGER_BIND_HOST = option(
    "taskmanager.bind-host",
    "str",
    "",
    "Address a TaskManager's data servers bind; unset = the advertised taskmanager.host (0.0.0.0 = every interface).",
)
METRICS_HOST = option(
    "metrics.reporter.prom.host",
    "str",
    "",
    "Address the Prometheus exporter binds; unset = the process's bind address (jobmanager.bind-host or "
    "taskmanager.bind-host as resolved).",
)
REGISTRATION_TIMEOUT = option(
    "taskmanager.registration.timeout",
    "duration",
    300_000,
    "A TaskManager that has not registered at its JobManager for this long exits (non-zero).",
    deprecated_keys=("taskmanager.maxRegistrationDuration",),
)

# -- heartbeats and scheduling ---------------------------------------------------------------
HEARTBEAT_INTERVAL = option("heartbeat.interval", "duration", 10_000, "TaskManager -> JobManager heartbeat period.")
HEARTBEAT_TIMEOUT = option(
    "heartbeat.timeout", "duration", 50_000, "A TaskManager without heartbeat for this long is lost."
)
SHUTDOWN_ON_APPLICATION_FINISH = option(
    "execution.shutdown-on-application-finish",
    "bool",
    True,
    "Application mode: the JobManager exits when its job ended; false keeps it (and its REST API) up until "
    "terminated, so a client (the Kubernetes operator) can read the final state and savepoint.",
)
SLOT_REQUEST_TIMEOUT = option(
    "slot.request.timeout", "duration", 300_000, "How long a job waits for enough free slots."
)
TM_RESOURCE_ID = option(
    "taskmanager.resource-id", "str", "", "The TaskManager's id; empty = generated."
)
METRICS_UPDATE_INTERVAL = option(
    "metrics.fetcher.update-interval", "duration", 10_000, "How often TaskManagers report metrics to the JobManager."
)

# -- security: the secret RPC and data connections authenticate with ------------------------
CLUSTER_SECRET = option(
    "security.cluster-secret",
    "str",
    "",
    "The secret every JobManager, TaskManager and slot process of a cluster shares: RPC and data connections "
    "prove they know it (HMAC challenge-response) before anything is decoded; at least 16 bytes. "
    "STROM_CLUSTER_SECRET wins over it; unset = security.cluster-secret-file.",
)
CLUSTER_SECRET_FILE = option(
    "security.cluster-secret-file",
    "str",
    "~/.strom/cluster-secret",
    "A file holding the cluster secret, read when neither STROM_CLUSTER_SECRET nor security.cluster-secret is "
    "set; the first process that needs it creates it (mode 0600, random), as Erlang's cookie file.",
)


# PyFlink's typed option builder (ConfigOptions.key("k").string_type()...) is not offered: options are Flink
# keys set on a Configuration, each declared once in this registry
def _refused_config_options() -> type:
    from strom.common.refused_names import refused_name

    return refused_name(
        "ConfigOptions", "options are Flink keys, each declared once in Strom's registry",
        "set the key on a Configuration: config.set_string('pipeline.name', 'job')",
    )


ConfigOptions = _refused_config_options()

