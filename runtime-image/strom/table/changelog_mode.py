"""`ChangelogMode` (PyFlink's): which row kinds a changelog stream carries. from_changelog_stream reads
Flink's default, ChangelogMode.all() (+I, -U, +U, -D); the other modes are named and refused there."""

from __future__ import annotations


class ChangelogMode:
    def __init__(self, kinds: tuple[str, ...]) -> None:
        self._kinds = kinds

    @staticmethod
    def insert_only() -> ChangelogMode:
        return ChangelogMode(("+I",))

    @staticmethod
    def upsert() -> ChangelogMode:
        return ChangelogMode(("+I", "+U", "-D"))

    @staticmethod
    def all() -> ChangelogMode:
        return ChangelogMode(("+I", "-U", "+U", "-D"))

    def is_all(self) -> bool:
        return self._kinds == ("+I", "-U", "+U", "-D")

    def __repr__(self) -> str:
        return f"[{', '.join(self._kinds)}]"
