"""The SQL JDBC table's statements and scan partitions, checked against hand-written expectations (the
statements themselves run against PostgreSQL in test_jdbc_sql.py)."""

from __future__ import annotations

import pytest
from strom.connectors.jdbc.table_statements import (
    delete_statement,
    lookup_statement,
    partition_ranges,
    partition_where,
    upsert_statement,
)


def test_upsert_updates_the_non_key_columns_of_a_quoted_schema_table():
    assert upsert_statement("public.Orders", ["id", "Name", "n"], ["id"]) == (
        'INSERT INTO "public"."Orders" ("id", "Name", "n") VALUES (%s, %s, %s) ON CONFLICT ("id") DO UPDATE SET '
        '"Name" = EXCLUDED."Name", "n" = EXCLUDED."n"')


def test_a_table_of_key_columns_only_does_nothing_on_conflict():
    assert upsert_statement("t", ["a", "b"], ["a", "b"]).endswith('ON CONFLICT ("a", "b") DO NOTHING')


def test_lookup_and_delete_compare_every_key_column():
    assert lookup_statement("t", ["id", "v"], ["id", "v"]) == 'SELECT "id", "v" FROM "t" WHERE "id" = %s AND "v" = %s'
    assert delete_statement('we"ird', ["k"]) == 'DELETE FROM "we""ird" WHERE "k" = %s'


@pytest.mark.parametrize(("lower", "upper", "num", "expected"), [
    (1, 10, 3, [(1, 4), (5, 7), (8, 10)]),
    (0, 1, 5, [(0, 0), (1, 1)]),
    (5, 5, 1, [(5, 5)]),
])
def test_partition_ranges_cover_the_bounds_without_gaps(lower, upper, num, expected):
    assert partition_ranges(lower, upper, num) == expected


def test_the_first_and_last_partitions_also_read_rows_outside_the_bounds():
    ranges = partition_ranges(1, 10, 2)
    assert partition_where("k", 0, ranges) == '("k" BETWEEN 1 AND 5 OR "k" < 1 OR "k" IS NULL)'
    assert partition_where("k", 1, ranges) == '("k" BETWEEN 6 AND 10 OR "k" > 10)'


def test_bad_partition_bounds_are_refused():
    with pytest.raises(ValueError, match="cannot cut"):
        partition_ranges(10, 1, 2)
