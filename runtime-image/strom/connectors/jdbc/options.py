"""The JDBC sink's options with PyFlink's builders: connection, execution (batching, retries) and
exactly-once (two-phase commit) options. Values are checked when built, each error one line naming
the builder method to fix."""

from __future__ import annotations

from dataclasses import dataclass

from strom.connectors.jdbc.urls import PostgresAddress, parse_jdbc_url

POSTGRES_DRIVER = "org.postgresql.Driver"


@dataclass(frozen=True, slots=True)
class JdbcConnectionOptions:
    """Where the database is (PyFlink's JdbcConnectionOptions)."""

    url: str
    driver_name: str | None = None
    user_name: str | None = None
    password: str | None = None
    connection_check_timeout_seconds: int = 60

    def address(self) -> PostgresAddress:
        return parse_jdbc_url(self.url)

    def get_db_url(self) -> str:
        return self.url

    def get_driver_name(self) -> str | None:
        return self.driver_name

    def get_user_name(self) -> str | None:
        return self.user_name

    def get_password(self) -> str | None:
        return self.password

    def __repr__(self) -> str:  # never the password (job graphs and logs show options)
        return f"JdbcConnectionOptions(url={self.url!r}, user_name={self.user_name!r})"

    class JdbcConnectionOptionsBuilder:
        def __init__(self) -> None:
            self._url: str | None = None
            self._driver: str | None = None
            self._user: str | None = None
            self._password: str | None = None
            self._check_timeout = 60

        def with_url(self, url: str) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._url = url
            return self

        def with_driver_name(self, driver_name: str) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._driver = driver_name
            return self

        def with_user_name(self, user_name: str) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._user = user_name
            return self

        def with_password(self, password: str) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._password = password
            return self

        def with_connection_check_timeout_seconds(
            self, timeout: int
        ) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            if timeout <= 0:
                raise ValueError(f"with_connection_check_timeout_seconds: must be positive, got {timeout}")
            self._check_timeout = timeout
            return self

        def build(self) -> JdbcConnectionOptions:
            if not self._url:
                raise ValueError("JdbcConnectionOptions: no url; call with_url('jdbc:postgresql://host:port/db')")
            parse_jdbc_url(self._url)  # refuses other databases and malformed URLs now, not in the task
            if self._driver not in (None, POSTGRES_DRIVER):
                raise ValueError(
                    f"JdbcConnectionOptions: driver {self._driver!r} is not supported; Strom talks to PostgreSQL "
                    f"through psycopg (with_driver_name({POSTGRES_DRIVER!r}) or none)"
                )
            return JdbcConnectionOptions(self._url, self._driver, self._user, self._password, self._check_timeout)


@dataclass(frozen=True, slots=True)
class JdbcExecutionOptions:
    """When batches are written and how often a failed one is retried (PyFlink's JdbcExecutionOptions;
    Flink's defaults: 5000 rows, no interval, 3 retries)."""

    batch_interval_ms: int = 0
    batch_size: int = 5000
    max_retries: int = 3

    @staticmethod
    def defaults() -> JdbcExecutionOptions:
        return JdbcExecutionOptions()

    @staticmethod
    def builder() -> JdbcExecutionOptionsBuilder:
        return JdbcExecutionOptionsBuilder()

    def get_batch_interval_ms(self) -> int:
        return self.batch_interval_ms

    def get_batch_size(self) -> int:
        return self.batch_size

    def get_max_retries(self) -> int:
        return self.max_retries


class JdbcExecutionOptionsBuilder:
    def __init__(self) -> None:
        self._interval = 0
        self._size = 5000
        self._retries = 3

    def with_batch_interval_ms(self, interval_ms: int) -> JdbcExecutionOptionsBuilder:
        if interval_ms < 0:
            raise ValueError(f"with_batch_interval_ms: must be >= 0 (0: no interval), got {interval_ms}")
        self._interval = int(interval_ms)
        return self

    def with_batch_size(self, size: int) -> JdbcExecutionOptionsBuilder:
        if size <= 0:
            raise ValueError(f"with_batch_size: must be positive, got {size}")
        self._size = int(size)
        return self

    def with_max_retries(self, max_retries: int) -> JdbcExecutionOptionsBuilder:
        if max_retries < 0:
            raise ValueError(f"with_max_retries: must be >= 0, got {max_retries}")
        self._retries = int(max_retries)
        return self

    def build(self) -> JdbcExecutionOptions:
        return JdbcExecutionOptions(self._interval, self._size, self._retries)


@dataclass(frozen=True, slots=True)
class JdbcExactlyOnceOptions:
    """Two-phase commit settings (Flink's JdbcExactlyOnceOptions, in snake_case).

    `transaction_id_prefix` starts the id of every prepared transaction of the sink: two jobs writing
    to one database with the same sink uid need different prefixes, since a restored sink rolls back
    the prepared transactions of its prefix that its checkpoint does not hold.
    """

    max_commit_attempts: int = 3
    transaction_id_prefix: str = "strom-jdbc"

    @staticmethod
    def defaults() -> JdbcExactlyOnceOptions:
        return JdbcExactlyOnceOptions()

    @staticmethod
    def builder() -> JdbcExactlyOnceOptionsBuilder:
        return JdbcExactlyOnceOptionsBuilder()


class JdbcExactlyOnceOptionsBuilder:
    def __init__(self) -> None:
        self._attempts = 3
        self._prefix = "strom-jdbc"

    def with_max_commit_attempts(self, attempts: int) -> JdbcExactlyOnceOptionsBuilder:
        if attempts <= 0:
            raise ValueError(f"with_max_commit_attempts: must be positive, got {attempts}")
        self._attempts = int(attempts)
        return self

    def with_transaction_id_prefix(self, prefix: str) -> JdbcExactlyOnceOptionsBuilder:
        if not prefix or len(prefix) > 64 or ":" in prefix:
            raise ValueError(
                f"with_transaction_id_prefix: {prefix!r} must be 1-64 characters without ':' (ids are prefix:...)"
            )
        self._prefix = prefix
        return self

    def build(self) -> JdbcExactlyOnceOptions:
        return JdbcExactlyOnceOptions(self._attempts, self._prefix)
