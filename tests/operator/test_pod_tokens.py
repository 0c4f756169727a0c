"""JobManager and TaskManager pods mount no ServiceAccount token unless the user's ServiceAccount or
pod template asks for one: nothing in them calls the Kubernetes API."""

from __future__ import annotations

from typing import Any

import pytest
from strom_operator.resources.jobmanager_deployment import build_jobmanager_deployment
from strom_operator.resources.labels import FlinkJobRef
from strom_operator.resources.taskmanager_deployment import build_taskmanager_deployment

from tests.operator.fakes import make_spec

REF = FlinkJobRef("wordcount", "streams", "uid-1")
BUILDERS = [build_jobmanager_deployment, build_taskmanager_deployment]


def _pod_spec(build: Any, **spec: Any) -> dict[str, Any]:
    return build(REF, make_spec(**spec))["spec"]["template"]["spec"]


@pytest.mark.parametrize("build", BUILDERS)
def test_no_token_by_default(build):
    pod = _pod_spec(build)
    assert pod["automountServiceAccountToken"] is False and "serviceAccountName" not in pod


@pytest.mark.parametrize("build", BUILDERS)
def test_a_users_service_account_decides_for_itself(build):
    pod = _pod_spec(build, serviceAccount="job-identity")
    assert pod["serviceAccountName"] == "job-identity" and "automountServiceAccountToken" not in pod


@pytest.mark.parametrize("build, where, mounted", [
    (build_jobmanager_deployment, "podTemplate", True),
    (build_taskmanager_deployment, "podTemplate", True),
    (build_jobmanager_deployment, "jobManager__podTemplate", True),
    (build_taskmanager_deployment, "jobManager__podTemplate", False),
    (build_taskmanager_deployment, "taskManager__podTemplate", True),
    (build_jobmanager_deployment, "taskManager__podTemplate", False),
])
def test_a_pod_template_that_asks_for_a_token_gets_it_in_the_pods_it_applies_to(build, where, mounted):
    pod = _pod_spec(build, **{where: {"spec": {"automountServiceAccountToken": True}}})
    assert pod["automountServiceAccountToken"] is mounted


def test_a_pod_template_can_refuse_the_token_of_a_named_service_account():
    pod = _pod_spec(build_taskmanager_deployment, serviceAccount="sa",
                    podTemplate={"spec": {"automountServiceAccountToken": False}})
    assert pod["automountServiceAccountToken"] is False
