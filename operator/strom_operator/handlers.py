"""The Kopf handlers of the FlinkJob operator: `kopf run -m strom_operator.handlers`.

Thin by design: each handler finds the operator's `Reconciler` in the memo and asks it for a
pass; the decisions are the pure lifecycle functions'. The FlinkJob's daemon (`follow`) is the one
runner of its passes: it observes (the job's state, savepoints in flight, periodic savepoints, pod
problems) and acts at the delay each step asks for, a failure's back-off included. Creation, spec
changes and resumption only wake it, and only for a spec generation its last pass has not read
(wakeups.py): the operator's own status patches never start a pass. The job's Deployments and pods
are watched (`@kopf.index` handlers below; owned_objects.py), so a pass reads them from memory; with
spec.autoscaler enabled, an `autoscaler` daemon evaluates the job's metrics every metricsInterval
(reconciler.autoscale). The
deletion handler holds the finalizer until the deletion steps are done (a final savepoint with
`savepoints.onDeletion`). Settings come from the environment (see `OperatorConfig`), which the
`strom-operator` command fills from its flags.

On a real, secured API server: watching named namespaces, kopf does not scan the cluster's CRDs and
namespaces (which the chart's namespaced Role does not allow); the operator's own API client renews
its credentials with the same login as kopf's (`obtain_credentials`: re-run on a 401, and the
projected token file is re-read when it rotates); Events are posted aggregated (event_recorder.py)
instead of kopf's one Event per log line.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

import kopf

from strom_operator.clients.event_recorder import EventRecorder
from strom_operator.clients.jobmanager_client import RestJobManagerClient
from strom_operator.clients.jobmanager_endpoints import JobManagerEndpoints
from strom_operator.clients.kube_api import KubeApi, KubeApiError
from strom_operator.config import OperatorConfig
from strom_operator.crd.definition import GROUP, PLURAL, VERSION
from strom_operator.lifecycle.steps import SOON
from strom_operator.observe.owned_objects import WATCHED_LABELS, OwnedObjects, index_entry
from strom_operator.reconcile.metrics import OperatorMetrics
from strom_operator.reconcile.observer import Observer
from strom_operator.reconcile.reconciler import Reconciler, ReconcilerSettings
from strom_operator.reconcile.wakeups import Wakeup

log = logging.getLogger(__name__)

FINALIZER = f"{GROUP}/finalizer"


class OperatorContext:
    """What every handler shares: built at startup, the API client completed at login."""

    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self.metrics = OperatorMetrics()
        self.endpoints = JobManagerEndpoints(config.jobmanager_url_map)
        # https with the job's client certificate for a JobManager deployed with TLS (jobmanager_tls.py)
        self.client = RestJobManagerClient(tls=self.endpoints.tls_for)
        self.reconciler: Reconciler | None = None
        self.events: EventRecorder | None = None
        self.wakeups: dict[str, Wakeup] = {}
        self.owned = OwnedObjects()  # kopf's indexes of the Deployments and pods, once a handler hands them over

    def connect(self, info: kopf.ConnectionInfo, relogin: Any) -> Reconciler:
        """The first login builds the API client; a later one (kopf's, after its own 401) refreshes it."""
        if self.reconciler is None:
            kube = KubeApi.from_connection_info(info, relogin=relogin)
            self.events = EventRecorder(kube)
            observer = Observer(kube, self.client, self.endpoints, owned=self.owned)
            self.reconciler = Reconciler(kube, self.client, observer, metrics=self.metrics,
                                         post_event=self.events.post,
                                         settings=ReconcilerSettings(self.config.max_requeue_s,
                                                                     job_ingress=self.config.job_ingress))
        else:
            self.reconciler.kube.update_credentials(info)
        return self.reconciler

    def wakeup(self, namespace: str, name: str) -> Wakeup:
        return self.wakeups.setdefault(f"{namespace}/{name}", Wakeup())

    def attach_indexes(self, kwargs: Mapping[str, Any]) -> None:
        """Kopf passes its indexes to every handler as keyword arguments named after the index handlers."""
        self.owned.attach(kwargs.get("owned_deployments"), kwargs.get("owned_pods"))


def _context(memo: Any) -> OperatorContext:
    ctx = getattr(memo, "strom", None)
    if ctx is None:
        raise kopf.TemporaryError("the operator has not started yet", delay=1)
    return ctx


def _reconciler(memo: Any) -> Reconciler:
    ctx = _context(memo)
    if ctx.reconciler is None:
        raise kopf.TemporaryError("the operator has not logged in to the API yet", delay=1)
    return ctx.reconciler


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, logger: logging.Logger, **_: Any) -> None:
    config = OperatorConfig.from_env()
    # Our own names for kopf's bookkeeping on the FlinkJob; log lines are not events (we post our own).
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=GROUP)
    # Kopf would post an Event per WARNING log line, unaggregated; ours are posted by the recorder.
    settings.posting.enabled = False
    settings.posting.reporting_component = "strom-operator"
    settings.watching.server_timeout = config.watch_timeout_s
    # Named namespaces: no cluster-wide listing of CRDs and namespaces (403 under a namespaced Role).
    settings.scanning.disabled = not config.cluster_scanning
    ctx = OperatorContext(config)
    memo.strom = ctx
    if config.metrics_port is not None:
        port = ctx.metrics.serve(config.metrics_port)
        logger.info("operator metrics on port %d", port)


def obtain_credentials(*, settings: kopf.OperatorSettings, logger: Any) -> kopf.ConnectionInfo:
    """Fresh credentials: the kubernetes client's loaders (they run exec plugins again and re-read
    the in-cluster token), else kopf's plain service-account and kubeconfig loaders."""
    info: kopf.ConnectionInfo | None = None
    try:
        import kubernetes  # noqa: F401 - its loaders know exec plugins and in-cluster configs

        info = kopf.login_via_client(settings=settings, logger=logger)
    except ImportError:
        pass
    except Exception as e:  # noqa: BLE001 - fall back to kopf's plain loaders
        log.debug("login via the kubernetes client failed: %s", e)
    info = (info or kopf.login_with_service_account(settings=settings, logger=logger)
            or kopf.login_with_kubeconfig(settings=settings, logger=logger))
    if info is None:
        raise kopf.LoginError("no Kubernetes credentials: neither a service account nor a kubeconfig")
    return info


def relogin_with(settings: kopf.OperatorSettings, logger: Any) -> Any:
    """The KubeApi's re-login on a 401: the same login, off the event loop (exec plugins are processes)."""
    async def relogin() -> kopf.ConnectionInfo:
        return await asyncio.to_thread(obtain_credentials, settings=settings, logger=logger)
    return relogin


@kopf.on.login()
def login(settings: kopf.OperatorSettings, logger: Any, memo: Any = None, **_: Any) -> kopf.ConnectionInfo:
    """Kopf's own login (again after a 401 on kopf's side), shared with the operator's API client."""
    info = obtain_credentials(settings=settings, logger=logger)
    ctx = getattr(memo, "strom", None)
    if ctx is not None:
        ctx.connect(info, relogin_with(settings, logger))
    return info


@kopf.on.probe(id="flinkjobs")
def probe(memo: kopf.Memo, **_: Any) -> int:
    """Liveness detail: how many FlinkJobs this operator follows."""
    ctx = getattr(memo, "strom", None)
    return len(ctx.wakeups) if ctx is not None else 0


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    ctx = getattr(memo, "strom", None)
    if ctx is None:
        return
    await ctx.client.close()
    if ctx.events is not None:
        await ctx.events.close()
    if ctx.reconciler is not None:
        for requests in ctx.reconciler.observer.savepoints.values():
            await requests.close()
        await ctx.reconciler.kube.close()


@kopf.index("apps", "v1", "deployments", labels=WATCHED_LABELS)
def owned_deployments(namespace: str | None, body: kopf.Body, **_: Any) -> dict[Any, Any]:
    """The JobManager and TaskManager Deployments by FlinkJob (owned_objects.py)."""
    return index_entry(namespace, body)


@kopf.index("v1", "pods", labels=WATCHED_LABELS)
def owned_pods(namespace: str | None, body: kopf.Body, **_: Any) -> dict[Any, Any]:
    """The JobManager and TaskManager pods by FlinkJob (owned_objects.py)."""
    return index_entry(namespace, body)


@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL, field="spec")
@kopf.on.resume(GROUP, VERSION, PLURAL)
async def reconcile_now(name: str, namespace: str, memo: kopf.Memo, body: kopf.Body, **kwargs: Any) -> None:
    """A new or changed spec, or an operator restart: the daemon runs a pass now unless its last pass
    read this generation already (kopf starts the daemon before this handler: wakeups.py)."""
    ctx = _context(memo)
    ctx.attach_indexes(kwargs)
    ctx.wakeup(namespace, name).spec_changed(body.get("metadata", {}).get("generation"))


@kopf.daemon(GROUP, VERSION, PLURAL, cancellation_timeout=10.0)
async def follow(name: str, namespace: str, memo: kopf.Memo, stopped: Any, logger: logging.Logger,
                 body: kopf.Body, **kwargs: Any) -> None:
    """Observe and reconcile until the FlinkJob goes: at the delay each step asks (a failure's back-off
    included), or earlier for a spec its last pass has not read. Failures to act are the reconciler's (a
    condition and an Event); what still escapes a pass is logged once per pass and posted as an
    aggregated Warning Event."""
    ctx = _context(memo)
    ctx.attach_indexes(kwargs)
    wakeup = ctx.wakeup(namespace, name)
    key = f"{namespace}/{name}"
    while not stopped:
        try:
            delay = await _reconciler(memo).reconcile(namespace, name)
        except kopf.TemporaryError:
            delay = 1.0
        except KubeApiError as e:  # reading the FlinkJob itself: nothing to write a condition on
            logger.warning("reconciliation of %s/%s: %s; retrying", namespace, name, e)
            _post(ctx, body, "ReconcileError", str(e))
            delay = SOON
        except Exception as e:  # noqa: BLE001 - one failed pass must not end the daemon
            logger.exception("reconciliation of %s/%s failed; retrying", namespace, name)
            _post(ctx, body, "ReconcileError", f"{type(e).__name__}: {e}")
            delay = SOON
        if delay is None:
            break
        seen = ctx.reconciler.seen_generation.get(key) if ctx.reconciler is not None else None
        await wakeup.wait(delay, seen=seen, stopped=stopped)
    ctx.wakeups.pop(key, None)


def _post(ctx: OperatorContext, body: Mapping[str, Any], reason: str, message: str) -> None:
    if ctx.events is not None:
        ctx.events.post(body, "Warning", reason, message)


def _autoscaler_enabled(spec: Mapping[str, Any], **_: Any) -> bool:
    return bool((spec.get("autoscaler") or {}).get("enabled"))


@kopf.daemon(GROUP, VERSION, PLURAL, id="autoscaler", cancellation_timeout=10.0, when=_autoscaler_enabled)
async def autoscale(name: str, namespace: str, memo: kopf.Memo, stopped: Any, logger: logging.Logger,
                    **kwargs: Any) -> None:
    """While spec.autoscaler.enabled: one evaluation per spec.autoscaler.metricsInterval. A rescale
    it writes wakes the FlinkJob's `follow` daemon, which performs it as an upgrade."""
    ctx = _context(memo)
    ctx.attach_indexes(kwargs)
    while not stopped:
        rescaled = False
        try:
            outcome = await _reconciler(memo).autoscale(namespace, name)
            delay, rescaled = outcome.delay, outcome.rescaled
        except kopf.TemporaryError:
            delay = 1.0
        except Exception:  # noqa: BLE001 - one failed evaluation must not end the daemon
            logger.exception("autoscaler evaluation of %s/%s failed; retrying", namespace, name)
            delay = SOON
        if delay is None:
            break
        if rescaled:
            ctx.wakeup(namespace, name).now()
        halted = asyncio.ensure_future(stopped.wait())
        try:
            await asyncio.wait({halted}, timeout=delay)
        finally:
            halted.cancel()


@kopf.on.delete(GROUP, VERSION, PLURAL)
async def delete(name: str, namespace: str, memo: kopf.Memo, logger: logging.Logger, **kwargs: Any) -> None:
    _context(memo).attach_indexes(kwargs)
    reason = await _reconciler(memo).finalize(namespace, name)
    logger.info("FlinkJob %s/%s: %s", namespace, name, reason)
