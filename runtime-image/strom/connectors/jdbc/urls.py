"""JDBC URLs and statements in PostgreSQL's terms: pure translations, no I/O.

A PyFlink job names its database with a JDBC URL (`jdbc:postgresql://host:port/db?user=...`) and
writes statements with JDBC's `?` placeholders. psycopg speaks libpq: connection parameters
(host, port, dbname, ...) and `%s` placeholders. Only PostgreSQL URLs are understood; any other
kind is refused with one line naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote

_PREFIX = "jdbc:postgresql:"
_DEFAULT_PORT = 5432

# pgJDBC's URL properties -> libpq's connection parameters (values pass through unchanged)
_PROPERTIES = {
    "user": "user",
    "password": "password",
    "sslmode": "sslmode",
    "sslrootcert": "sslrootcert",
    "sslcert": "sslcert",
    "sslkey": "sslkey",
    "connectTimeout": "connect_timeout",
    "loginTimeout": "connect_timeout",
    "ApplicationName": "application_name",
    "applicationName": "application_name",
    "targetServerType": "target_session_attrs",
    "options": "options",
}


@dataclass(frozen=True, slots=True)
class PostgresAddress:
    """Where a JDBC URL points, as libpq connection parameters."""

    hosts: tuple[tuple[str, int], ...]
    dbname: str
    params: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """host:port/db, for error messages (never the password)."""
        return ",".join(f"{h}:{p}" for h, p in self.hosts) + f"/{self.dbname}"

    def connect_kwargs(self, *, user: str | None, password: str | None) -> dict[str, str]:
        kwargs = dict(self.params)
        kwargs["host"] = ",".join(h for h, _ in self.hosts)
        kwargs["port"] = ",".join(str(p) for _, p in self.hosts)
        kwargs["dbname"] = self.dbname
        if user:
            kwargs["user"] = user
        if password:
            kwargs["password"] = password
        return kwargs


def parse_jdbc_url(url: str) -> PostgresAddress:
    """`jdbc:postgresql://host[:port][,host2[:port2]]/database[?property=value&...]` (pgJDBC's forms,
    also `jdbc:postgresql:database` for localhost) -> a `PostgresAddress`."""
    if not isinstance(url, str) or not url.startswith(_PREFIX):
        raise ValueError(
            f"JDBC url {url!r} is not supported: Strom's JDBC connector writes to PostgreSQL only "
            "(jdbc:postgresql://host:port/database)"
        )
    rest, _, query = url[len(_PREFIX):].partition("?")
    if rest.startswith("//"):
        authority, slash, dbname = rest[2:].partition("/")
        if not slash or not dbname:
            raise ValueError(f"JDBC url {url!r} names no database: expected jdbc:postgresql://host:port/database")
        hosts = tuple(_host_port(part, url) for part in authority.split(",")) if authority else (("localhost", 5432),)
    else:
        dbname, hosts = rest, (("localhost", _DEFAULT_PORT),)
        if not dbname or "/" in dbname:
            raise ValueError(f"JDBC url {url!r} is malformed: expected jdbc:postgresql://host:port/database")
    params: dict[str, str] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key == "ssl":
            if value.lower() in ("", "true"):
                params.setdefault("sslmode", "require")
            continue
        if key == "currentSchema":
            params["options"] = f"-csearch_path={value}"
            continue
        target = _PROPERTIES.get(key)
        if target is None:
            known = ", ".join(sorted([*_PROPERTIES, "ssl", "currentSchema"]))
            raise ValueError(f"JDBC url {url!r}: property {key!r} is not supported (supported: {known})")
        params[target] = value
    return PostgresAddress(hosts=hosts, dbname=unquote(dbname), params=params)


def _host_port(part: str, url: str) -> tuple[str, int]:
    if part.startswith("["):  # [ipv6]:port
        host, _, port = part[1:].partition("]")
        port = port.lstrip(":")
    else:
        host, _, port = part.partition(":")
    if not host:
        raise ValueError(f"JDBC url {url!r} has an empty host")
    if not port:
        return host, _DEFAULT_PORT
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"JDBC url {url!r}: port {port!r} is not a number between 1 and 65535")
    return host, int(port)


def translate_placeholders(sql: str) -> str:
    """JDBC's `?` parameters -> psycopg's `%s`, outside string literals, quoted identifiers, dollar-quoted
    strings and comments; a literal `%` becomes `%%` (psycopg's escape) and JDBC's escaped `??` a `?`
    (PostgreSQL's jsonb operators)."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in "'\"":
            end = _closing_quote(sql, i, c)
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif c == "-" and sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end < 0 else end
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif c == "/" and sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif c == "$" and (tag_end := _dollar_tag_end(sql, i)) > 0:
            tag = sql[i:tag_end]
            close = sql.find(tag, tag_end)
            end = n if close < 0 else close + len(tag)
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif c == "?":
            if sql.startswith("??", i):
                out.append("?")
                i += 2
            else:
                out.append("%s")
                i += 1
        elif c == "%":
            out.append("%%")
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def count_placeholders(sql: str) -> int:
    """How many parameters the translated statement takes."""
    return translate_placeholders(sql).replace("%%", "").count("%s")


def _closing_quote(sql: str, start: int, quote: str) -> int:
    """Index after the literal or identifier opened at `start` (a doubled quote is an escaped one)."""
    i = start + 1
    while i < len(sql):
        if sql[i] == quote:
            if i + 1 < len(sql) and sql[i + 1] == quote:
                i += 2
                continue
            return i + 1
        i += 1
    return len(sql)


def _dollar_tag_end(sql: str, start: int) -> int:
    """If a dollar-quote tag ($$ or $tag$) starts at `start`, the index after it, else -1 ($1 is not one)."""
    j = start + 1
    while j < len(sql) and (sql[j].isalnum() or sql[j] == "_"):
        j += 1
    if j < len(sql) and sql[j] == "$" and not sql[start + 1 : j].isdigit() or sql.startswith("$$", start):
        return j + 1
    return -1
