"""docs/pyflink-parity.md cannot lie (issue 18).

Every row that names a Strom module for a PyFlink name must import from it; the counts in the
page's summary line must be the table's; and the table must cover PyFlink's modules this issue
names (pyflink.common, pyflink.datastream with functions, state, window, the connectors Strom has).
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "pyflink-parity.md"
ROW = re.compile(r"^\| `(?P<pyflink>[\w.]+)` \| `(?P<name>\w+)` \| (?:`(?P<strom>[\w.]+)`|—) \|(?P<note>.*)\|$")


def _rows() -> list[re.Match[str]]:
    text = DOC.read_text()
    table = text.split("<!-- parity-table:start -->", 1)[1].split("<!-- parity-table:end -->", 1)[0]
    lines = [line for line in table.strip().splitlines()[2:] if line.strip()]
    rows = [ROW.match(line) for line in lines]
    assert all(rows), [line for line, row in zip(lines, rows, strict=True) if row is None]
    return rows  # type: ignore[return-value]


ROWS = _rows()
PRESENT = [r for r in ROWS if r["strom"]]


@pytest.mark.parametrize("row", PRESENT, ids=[f"{r['pyflink']}.{r['name']}" for r in PRESENT])
def test_a_name_marked_present_imports_from_the_strom_module_the_table_names(row: re.Match[str]) -> None:
    assert row["strom"] == "strom" + row["pyflink"][len("pyflink"):], "a row maps pyflink.X to strom.X"
    module = importlib.import_module(row["strom"])
    assert hasattr(module, row["name"]), f"{row['strom']} has no {row['name']}"


def test_the_summary_counts_are_the_tables() -> None:
    summary = re.search(r"\*\*(\d+) of (\d+) names are present\.\*\*", DOC.read_text())
    assert summary is not None
    assert (int(summary[1]), int(summary[2])) == (len(PRESENT), len(ROWS))


def test_the_table_covers_the_modules_the_issue_names() -> None:
    modules = {r["pyflink"] for r in ROWS}
    for required in (
        "pyflink.common",
        "pyflink.datastream",
        "pyflink.datastream.functions",
        "pyflink.datastream.state",
        "pyflink.datastream.window",
        "pyflink.datastream.connectors.file_system",
        "pyflink.datastream.connectors.kafka",
        "pyflink.datastream.connectors.jdbc",
        "pyflink.datastream.connectors.number_seq",
        "pyflink.metrics",
    ):
        assert required in modules
    assert len({(r["pyflink"], r["name"]) for r in ROWS}) == len(ROWS), "a name is listed twice"


def test_the_readme_links_the_table() -> None:
    assert "docs/pyflink-parity.md" in (DOC.parents[1] / "README.md").read_text()


REFUSED = [r for r in ROWS if not r["strom"] and r["note"].strip().startswith("refused")]


@pytest.mark.parametrize("row", REFUSED, ids=[f"{r['pyflink']}.{r['name']}" for r in REFUSED])
def test_a_refused_name_imports_and_refuses_its_use_in_one_line(row: re.Match[str]) -> None:
    """The table says why a name is left out; using the name says so too, in one line naming it, rather than
    an ImportError at the top of a PyFlink program."""
    from strom.common.unsupported import UnsupportedFeatureError

    module = importlib.import_module("strom" + row["pyflink"][len("pyflink"):])
    refused = getattr(module, row["name"])
    for use in (lambda: refused(), lambda: refused.builder(), lambda: refused.EXACTLY_ONCE):
        with pytest.raises(UnsupportedFeatureError) as e:
            use()
        message = str(e.value)
        assert message.startswith(f"{row['name']} is not available in Strom: ") and "\n" not in message


def test_every_missing_name_is_refused_or_says_why() -> None:
    missing = [r for r in ROWS if not r["strom"]]
    assert all(r["note"].strip() for r in missing), [r["name"] for r in missing if not r["note"].strip()]
