"""JDBC URLs and `?` placeholders in psycopg's terms (pure translations), and the builders' refusals."""

from __future__ import annotations

import pytest
from strom.common import Types
from strom.connectors.jdbc.urls import count_placeholders, parse_jdbc_url, translate_placeholders
from strom.datastream.connectors.jdbc import JdbcConnectionOptions, JdbcExecutionOptions, JdbcSink


def test_postgres_url_maps_to_libpq_parameters():
    a = parse_jdbc_url("jdbc:postgresql://db.example:5433/shop?user=u&password=p&ssl=true&currentSchema=sales")
    assert a.hosts == (("db.example", 5433),) and a.dbname == "shop"
    assert a.connect_kwargs(user=None, password=None) == {
        "host": "db.example", "port": "5433", "dbname": "shop", "user": "u", "password": "p",
        "sslmode": "require", "options": "-csearch_path=sales",
    }
    assert parse_jdbc_url("jdbc:postgresql://h1,h2:6000/d").hosts == (("h1", 5432), ("h2", 6000))
    assert parse_jdbc_url("jdbc:postgresql:d").hosts == (("localhost", 5432),)
    # builder options win over the URL's
    assert parse_jdbc_url("jdbc:postgresql://h/d?user=u").connect_kwargs(user="v", password=None)["user"] == "v"


@pytest.mark.parametrize(
    "url, words",
    [
        ("jdbc:mysql://h:3306/d", ["jdbc:mysql://h:3306/d", "PostgreSQL only"]),
        ("postgresql://h/d", ["postgresql://h/d", "PostgreSQL only"]),
        ("jdbc:postgresql://h:5432", ["names no database"]),
        ("jdbc:postgresql://h:99999/d", ["99999"]),
        ("jdbc:postgresql://h/d?frobnicate=1", ["'frobnicate'", "supported"]),
    ],
)
def test_bad_urls_are_refused_in_one_line_naming_the_url(url, words):
    with pytest.raises(ValueError) as info:
        JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url(url).build()
    message = str(info.value)
    assert "\n" not in message and all(w in message for w in words), message


def test_question_marks_become_psycopg_placeholders_outside_literals_and_comments():
    sql = "INSERT INTO t (a, b, c) VALUES (?, '?%''?', ?) -- ?\nON CONFLICT (a) DO UPDATE SET c = ? /* ? */"
    assert translate_placeholders(sql) == (
        "INSERT INTO t (a, b, c) VALUES (%s, '?%%''?', %s) -- ?\nON CONFLICT (a) DO UPDATE SET c = %s /* ? */"
    )
    assert translate_placeholders('SELECT "we?ird", $$ ? $$, $q$ ?$q$, doc ?? \'k\', ?') == (
        'SELECT "we?ird", $$ ? $$, $q$ ?$q$, doc ? \'k\', %s'
    )
    assert translate_placeholders("UPDATE t SET a = a % 2 WHERE b = $1 OR c = ?") == (
        "UPDATE t SET a = a %% 2 WHERE b = $1 OR c = %s"
    )
    assert count_placeholders(sql) == 3


def test_statement_and_type_info_must_agree_and_exactly_once_takes_no_retries():
    conn = JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url("jdbc:postgresql://h/d").build()
    with pytest.raises(ValueError, match="2 '\\?' parameter.*3 field"):
        JdbcSink.sink("INSERT INTO t VALUES (?, ?)", Types.ROW([Types.INT(), Types.INT(), Types.INT()]), conn)
    retrying = JdbcExecutionOptions.builder().with_max_retries(2).build()
    with pytest.raises(ValueError, match="with_max_retries\\(0\\)"):
        JdbcSink.exactly_once_sink("INSERT INTO t VALUES (?)", Types.ROW([Types.INT()]), conn, retrying)
    with pytest.raises(ValueError, match="with_batch_size"):
        JdbcExecutionOptions.builder().with_batch_size(0)
    with pytest.raises(ValueError, match="com.mysql.cj.jdbc.Driver"):
        JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url("jdbc:postgresql://h/d").with_driver_name(
            "com.mysql.cj.jdbc.Driver").build()
    assert "secret" not in repr(
        JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url("jdbc:postgresql://h/d").with_password(
            "secret").build())
