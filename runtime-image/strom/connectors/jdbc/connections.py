"""Opening psycopg connections for the JDBC sink, with errors that say where and what to check.

psycopg is imported here only, when a task opens its sink: a job without JDBC sinks needs no
driver (`pip install 'strom[jdbc]'`).
"""

from __future__ import annotations

from typing import Any

from strom.connectors.jdbc.options import JdbcConnectionOptions


def psycopg_module() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ImportError(
            "the JDBC connector needs psycopg 3: pip install 'strom[jdbc]' (or 'psycopg[binary]')"
        ) from None
    return psycopg


def first_line(error: BaseException) -> str:
    """An exception as one line (libpq's messages span several)."""
    text = " ".join(str(error).split())
    return text or type(error).__name__


def connect(options: JdbcConnectionOptions, *, autocommit: bool, what: str, advice: str | None = None) -> Any:
    """A connection to the database of `options`; a failure is one line naming the address and the
    option to check (`advice`: what to check instead of the DataStream builder's methods, e.g. a SQL
    table's 'url' option)."""
    psycopg = psycopg_module()
    address = options.address()
    kwargs = address.connect_kwargs(user=options.user_name, password=options.password)
    kwargs.setdefault("connect_timeout", str(options.connection_check_timeout_seconds))
    try:
        return psycopg.connect(autocommit=autocommit, **kwargs)
    except psycopg.Error as e:
        check = advice or (f"the url {options.url!r} given to JdbcConnectionOptions.with_url (and "
                           "with_user_name/with_password)")
        raise ConnectionError(
            f"{what} cannot connect to PostgreSQL at {address.describe()} ({first_line(e)}); check {check} and "
            "that the database accepts connections from this TaskManager"
        ) from e


def is_connection_error(error: BaseException) -> bool:
    """A failure a new connection may cure (the server went away, the network broke), as opposed to
    one of the statement or the data, which a retry repeats."""
    psycopg = psycopg_module()
    return isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError, ConnectionError))
