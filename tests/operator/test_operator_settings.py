"""What the operator tells kopf at startup: no cluster scanning when it watches named namespaces (a
namespaced Role cannot list CRDs and namespaces), scanning when it watches all or patterns; and
kopf's own one-Event-per-log-line posting off (the operator's Events are aggregated)."""

from __future__ import annotations

import asyncio
import logging

import kopf
import pytest
from strom_operator import handlers
from strom_operator.config import NAMESPACES_ENV, OperatorConfig, cluster_scanning
from strom_operator.main import export_scope, parse_args


@pytest.mark.parametrize(("namespaces", "scanning"), [
    (("streams",), False), (("streams", "batch"), False), (None, True), (("team-*",), True), (("ns-[ab]",), True)])
def test_cluster_scanning_only_for_every_namespace_or_patterns(namespaces, scanning) -> None:
    assert cluster_scanning(namespaces) is scanning


@pytest.mark.parametrize(("env", "namespaces"), [
    ("streams,batch", ("streams", "batch")), ("*", None), ("", None), (" a , ", ("a",))])
def test_the_watched_namespaces_come_from_the_environment(env, namespaces) -> None:
    assert OperatorConfig.from_env({NAMESPACES_ENV: env}).namespaces == namespaces


def _startup_settings(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> kopf.OperatorSettings:
    args = parse_args(argv)
    monkeypatch.setenv(NAMESPACES_ENV, "")  # recorded, so what export_scope sets is undone after the test
    monkeypatch.setenv("STROM_OPERATOR_METRICS_PORT", "off")
    export_scope(args)
    settings = kopf.OperatorSettings()
    asyncio.run(handlers.startup(settings=settings, memo=kopf.Memo(), logger=logging.getLogger("test")))
    return settings


def test_named_namespaces_turn_kopfs_cluster_scanning_off(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _startup_settings(monkeypatch, ["--namespace", "streams", "-n", "batch"])
    assert settings.scanning.disabled is True
    assert settings.posting.enabled is False


def test_all_namespaces_keep_kopfs_cluster_scanning(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _startup_settings(monkeypatch, ["--all-namespaces"]).scanning.disabled is False
