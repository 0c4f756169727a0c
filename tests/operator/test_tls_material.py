"""The generated TLS material, judged by cryptography and by real TLS handshakes (Python's ssl, OpenSSL):
the leaf verifies against ca.crt, names the JobManager Service, matches its key, serves as server and
client; and the operator's REST client speaks mutual TLS with it to a JobManager stand-in over loopback,
while a client without the job's certificate, or with another job's, is refused."""

from __future__ import annotations

import asyncio
import base64
import datetime
import ssl
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID
from strom_operator.clients.action_failures import TlsSecretPending
from strom_operator.clients.jobmanager_client import JobManagerUnreachable, RestJobManagerClient
from strom_operator.clients.jobmanager_endpoints import JobManagerEndpoints
from strom_operator.clients.jobmanager_tls import client_context, deployed_with_tls, follow_deployed_tls, tls_possible
from strom_operator.observe.owned_objects import index_entry
from strom_operator.resources.jobmanager_deployment import build_jobmanager_deployment
from strom_operator.resources.labels import FlinkJobRef
from strom_operator.resources.tls_secret import generated_tls_secret

from tests.operator.fakes import make_spec

REF = FlinkJobRef("wordcount", "streams", "uid-1")
SERVICE_NAMES = {"wordcount-jobmanager", "wordcount-jobmanager.streams", "wordcount-jobmanager.streams.svc",
                 "wordcount-jobmanager.streams.svc.cluster.local"}


def _files(secret: dict[str, Any]) -> dict[str, bytes]:
    return {k: base64.b64decode(v) for k, v in secret["data"].items()}


@pytest.fixture(scope="module")
def secret() -> dict[str, Any]:
    made = generated_tls_secret(REF)
    return {**made, "metadata": {**made["metadata"], "resourceVersion": "1"}}  # as the API server returns it


def test_the_secret_has_cert_managers_layout_and_is_the_flinkjobs(secret):
    assert secret["type"] == "kubernetes.io/tls" and set(secret["data"]) == {"tls.crt", "tls.key", "ca.crt"}
    assert secret["metadata"]["name"] == "wordcount-tls" and secret["metadata"]["namespace"] == "streams"
    assert secret["metadata"]["ownerReferences"][0] == {
        "apiVersion": "strom.io/v1beta1", "kind": "FlinkJob", "name": "wordcount", "uid": "uid-1",
        "controller": True, "blockOwnerDeletion": True}


def test_the_leaf_is_signed_by_the_ca_names_the_service_and_matches_its_key(secret):
    files = _files(secret)
    ca = x509.load_pem_x509_certificate(files["ca.crt"])
    leaf = x509.load_pem_x509_certificate(files["tls.crt"])
    key = serialization.load_pem_private_key(files["tls.key"], password=None)
    leaf.verify_directly_issued_by(ca)  # raises unless ca's key signed it
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    assert set(leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName)) == SERVICE_NAMES
    assert set(leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == {
        ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    public = serialization.PublicFormat.SubjectPublicKeyInfo
    assert key.public_key().public_bytes(serialization.Encoding.DER, public) == \
        leaf.public_key().public_bytes(serialization.Encoding.DER, public)
    now = datetime.datetime.now(datetime.UTC)
    assert leaf.not_valid_before_utc <= now < leaf.not_valid_after_utc
    assert leaf.not_valid_after_utc - now > datetime.timedelta(days=3640)


def test_every_generation_is_a_new_ca(secret):
    """One CA per FlinkJob: another job's (or a regenerated) Secret is another trust domain."""
    other = _files(generated_tls_secret(REF))
    assert other["ca.crt"] != _files(secret)["ca.crt"] and other["tls.key"] != _files(secret)["tls.key"]


def _server_context(files: dict[str, bytes], tmp_path, *, mutual: bool = True) -> ssl.SSLContext:
    """The JobManager's side as the contract configures it: its leaf, trusting ca.crt, clients must present one."""
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    context.load_verify_locations(tmp_path / "ca.crt")
    context.verify_mode = ssl.CERT_REQUIRED if mutual else ssl.CERT_NONE
    return context


async def _jobmanager(context: ssl.SSLContext) -> AsyncIterator[int]:
    seen: list[Any] = []

    async def overview(request: web.Request) -> web.Response:
        seen.append(request.transport.get_extra_info("peercert"))
        return web.json_response({"jobs": [{"jid": "j1", "name": "wc", "state": "RUNNING", "start-time": 1}]})

    app = web.Application()
    app.router.add_get("/jobs/overview", overview)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # noqa: SLF001 - aiohttp names no public accessor
    try:
        yield port
    finally:
        await runner.cleanup()


def _url_map(tmp_path, port: int) -> JobManagerEndpoints:
    url_map = tmp_path / "urls.json"
    url_map.write_text(f'{{"streams/wordcount-jobmanager": "http://127.0.0.1:{port}"}}')
    return JobManagerEndpoints(str(url_map))


TLS_SPEC = make_spec(security={"tls": {"enabled": True}})


def _deployed(spec: Any = TLS_SPEC) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the JobManager Deployment of `spec`, `spec` as lastReconciledSpec): what a pass follows."""
    return build_jobmanager_deployment(REF, spec), spec.to_dict()


class Secrets:
    def __init__(self, secret: dict[str, Any] | None) -> None:
        self.secret = secret

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        assert (namespace, name) == ("streams", "wordcount-tls")
        return self.secret


def test_the_operator_speaks_mutual_tls_with_the_jobs_certificate(secret, tmp_path):
    async def run() -> None:
        gen = _jobmanager(_server_context(_files(secret), tmp_path))
        port = await gen.__anext__()
        endpoints = _url_map(tmp_path, port)
        client = RestJobManagerClient(tls=endpoints.tls_for)
        try:
            await follow_deployed_tls(endpoints.tls, Secrets(secret), REF, *_deployed())
            url = endpoints.url(REF)
            assert url == f"https://127.0.0.1:{port}"  # the address the map gives, over https
            [job] = await client.jobs_overview(url)
            assert job.state == "RUNNING"
            # a JobManager deployed without TLS: plain HTTP again, which this one does not speak
            await follow_deployed_tls(endpoints.tls, Secrets(secret), REF, *_deployed(make_spec()))
            assert endpoints.url(REF) == f"http://127.0.0.1:{port}"
            with pytest.raises(JobManagerUnreachable):
                await client.jobs_overview(endpoints.url(REF))
        finally:
            await client.close()
            await gen.aclose()

    asyncio.run(run())


def test_a_client_without_the_jobs_certificate_or_with_another_jobs_is_refused(secret, tmp_path):
    other = generated_tls_secret(REF)  # another CA: what another FlinkJob's Secret holds

    async def run() -> None:
        gen = _jobmanager(_server_context(_files(secret), tmp_path))
        port = await gen.__anext__()
        try:
            no_cert = ssl.create_default_context(cadata=_files(secret)["ca.crt"].decode())
            no_cert.check_hostname = False
            for context in (no_cert, client_context(other)):
                with pytest.raises((ssl.SSLError, OSError, ConnectionError)):
                    reader, writer = await asyncio.open_connection(
                        "127.0.0.1", port, ssl=context, server_hostname="wordcount-jobmanager.streams.svc")
                    writer.write(b"GET /jobs/overview HTTP/1.1\r\nHost: x\r\n\r\n")
                    await writer.drain()
                    if not await reader.read(1):  # TLS 1.3: the refusal arrives after the handshake
                        raise ConnectionError("closed by the server")
            # the right certificate, the wrong name: the operator checks the Service's name
            bad_name = client_context(secret)
            with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch|doesn't match"):
                await asyncio.open_connection("127.0.0.1", port, ssl=bad_name,
                                              server_hostname="wordcount-jobmanager.elsewhere.svc")
        finally:
            await gen.aclose()

    asyncio.run(run())


def test_a_server_with_another_ca_is_not_trusted_by_the_operator(secret, tmp_path):
    impostor = _files(generated_tls_secret(REF))

    async def run() -> None:
        gen = _jobmanager(_server_context(impostor, tmp_path, mutual=False))
        port = await gen.__anext__()
        endpoints = _url_map(tmp_path, port)
        client = RestJobManagerClient(tls=endpoints.tls_for)
        try:
            await follow_deployed_tls(endpoints.tls, Secrets(secret), REF, *_deployed())
            with pytest.raises(JobManagerUnreachable, match="certificate verify failed"):
                await client.jobs_overview(endpoints.url(REF))
        finally:
            await client.close()
            await gen.aclose()

    asyncio.run(run())


def test_a_secret_without_a_key_is_a_pending_condition_naming_it(secret):
    broken = {**secret, "data": {k: v for k, v in secret["data"].items() if k != "ca.crt"}}
    with pytest.raises(TlsSecretPending, match="Secret streams/wordcount-tls has no ca.crt: delete it and the "
                                               "operator generates a new one"):
        asyncio.run(follow_deployed_tls(JobManagerEndpoints("").tls, Secrets(broken), REF, *_deployed()))


def test_a_secret_that_does_not_parse_is_a_pending_condition_naming_it(secret):
    garbled = {**secret, "data": {**secret["data"], "tls.key": base64.b64encode(b"not a key").decode()}}
    with pytest.raises(TlsSecretPending, match="Secret streams/wordcount-tls cannot serve as the operator's client "
                                               "certificate: .*; delete it to have a new one generated"):
        asyncio.run(follow_deployed_tls(JobManagerEndpoints("").tls, Secrets(garbled), REF, *_deployed()))


def test_the_engine_reads_the_operators_configuration_and_material(secret, tmp_path):
    """The other side of the contract: the engine's own reader (strom.common.tls) takes the ConfigMap's keys
    with the Secret's files where the pod mounts them (here under tmp_path), builds its contexts, and they
    complete mutual handshakes with each other (internal) and with the operator's client (REST)."""
    from strom.common.configuration import Configuration
    from strom.common.tls import internal_tls, rest_client_tls, rest_server_tls
    from strom_operator.resources.configmap import engine_configuration

    for name, data in _files(secret).items():
        (tmp_path / name).write_bytes(data)
    conf = {k: v.replace("/opt/strom/tls", str(tmp_path))
            for k, v in engine_configuration(REF, make_spec(security={"tls": {"enabled": True}})).items()
            if k.startswith("security.")}
    config = Configuration(conf)
    internal, rest_server, rest_client = internal_tls(config), rest_server_tls(config), rest_client_tls(config)
    assert internal is not None and rest_server is not None and rest_client is not None
    assert rest_server.verify_mode == ssl.CERT_REQUIRED  # authentication-enabled: clients need the job's certificate

    async def handshake(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext, hostname: str | None) -> bytes:
        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(await reader.readexactly(2))
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=server_ctx)
        port = server.sockets[0].getsockname()[1]
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_ctx, server_hostname=hostname)
            writer.write(b"ok")
            answer = await reader.readexactly(2)
            writer.close()
            return answer
        finally:
            server.close()
            await server.wait_closed()

    async def run() -> None:
        assert await handshake(internal.server, internal.client, None) == b"ok"  # RPC and data: mutual, no names
        operator_client = client_context(secret)
        assert await handshake(rest_server, operator_client, "wordcount-jobmanager.streams.svc") == b"ok"
        # the engine's own REST client (application mode's, the CLI's in a pod) by the Service's short name
        assert await handshake(rest_server, rest_client, "wordcount-jobmanager") == b"ok"

    asyncio.run(run())


def test_https_follows_the_jobmanager_that_runs_not_the_spec_an_upgrade_heads_for(secret):
    """An upgrade that turns TLS on writes its target spec (lastReconciledSpec) before it stops the old
    JobManager with a savepoint: that one is asked over plain HTTP, the new one over https; and back."""
    plain_jm, tls_jm = build_jobmanager_deployment(REF, make_spec()), build_jobmanager_deployment(REF, TLS_SPEC)
    assert not deployed_with_tls(plain_jm) and deployed_with_tls(tls_jm) and not deployed_with_tls(None)
    # what the operator's watch keeps of a Deployment (owned_objects.index_entry) is enough to tell
    assert deployed_with_tls(index_entry("streams", tls_jm)[("streams", "wordcount")])
    assert not deployed_with_tls(index_entry("streams", plain_jm)[("streams", "wordcount")])
    endpoints = JobManagerEndpoints("")
    for jobmanager, reconciled, scheme in ((plain_jm, TLS_SPEC, "http"), (tls_jm, TLS_SPEC, "https"),
                                           (tls_jm, make_spec(), "https"), (None, TLS_SPEC, "http")):
        asyncio.run(follow_deployed_tls(endpoints.tls, Secrets(secret), REF, jobmanager, reconciled.to_dict()))
        assert endpoints.url(REF).startswith(f"{scheme}://wordcount-jobmanager.streams.svc:8081")


def test_only_a_job_that_may_run_tls_costs_a_look_at_its_deployment(secret):
    endpoints = JobManagerEndpoints("")
    plain, tls = make_spec().to_dict(), TLS_SPEC.to_dict()
    assert not tls_possible(endpoints.tls, REF, plain, plain) and not tls_possible(endpoints.tls, REF, None, None)
    assert tls_possible(endpoints.tls, REF, tls, plain) and tls_possible(endpoints.tls, REF, plain, tls)
    asyncio.run(follow_deployed_tls(endpoints.tls, Secrets(secret), REF, *_deployed()))
    assert tls_possible(endpoints.tls, REF, plain, plain)  # speaking TLS now: look until that JobManager goes
