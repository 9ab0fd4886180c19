"""A scale set gone from the service is found by one lookup per listener death, and handed back (ARC #4370)."""

from __future__ import annotations

from typing import Any

from arc_controllers import constants
from arc_controllers.actions.errors import ActionsError, ActionsNotFoundError
from arc_controllers.api.v1alpha1 import AUTOSCALING_LISTENER, AUTOSCALING_RUNNER_SET, POD
from arc_controllers.controllers.autoscalinglistener import AutoscalingListenerReconciler
from arc_controllers.controllers.autoscalinglistener.registration import RegistrationCheck
from arc_controllers.controllers.autoscalingrunnerset.registration import ScaleSetRegistration
from arc_controllers.resourcebuilder.listener import ListenerBuildOptions, new_scale_set_listener_pod
from reconcilekit.client.interfaces import ObjectKey
from reconcilekit.testing import FakeClient

NS, ARS_NS, NAME = "arc-system", "runners", "listener"
KEY = ObjectKey(NS, NAME)
SCALE_SET_ID = 7


class _Service:
    """The scale set lookup only: answers, or raises ``error``; counts the calls."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.lookups: list[int] = []

    async def get_runner_scale_set_by_id(self, runner_scale_set_id: int, /) -> Any:
        self.lookups.append(runner_scale_set_id)
        if self.error is not None:
            raise self.error
        return object()


def _not_found() -> ActionsNotFoundError:
    return ActionsNotFoundError("runner scale set 7 not found", status=404)


def _ars() -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingRunnerSet",
        "metadata": {
            "name": "scale-set",
            "namespace": ARS_NS,
            "annotations": {constants.ANNOTATION_KEY_RUNNER_SCALE_SET_ID: str(SCALE_SET_ID)},
        },
        "spec": {"githubConfigUrl": "https://github.com/owner", "githubConfigSecret": "secret"},
    }


def _listener() -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingListener",
        "metadata": {"name": NAME, "namespace": NS, "finalizers": [constants.AUTOSCALING_LISTENER_FINALIZER_NAME]},
        "spec": {
            "autoscalingRunnerSetNamespace": ARS_NS,
            "autoscalingRunnerSetName": "scale-set",
            "runnerScaleSetId": SCALE_SET_ID,
        },
    }


def _pod(*, dead: bool) -> dict[str, Any]:
    state = {"terminated": {"exitCode": 1, "reason": "Error"}} if dead else {"running": {}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": NAME, "namespace": NS},
        "status": {
            "phase": "Failed" if dead else "Running",
            "containerStatuses": [{"name": "listener", "state": state}],
        },
    }


def _check(fake: FakeClient, service: _Service) -> RegistrationCheck:
    async def factory(listener: Any) -> _Service:
        assert listener["kind"] == "AutoscalingListener"  # its spec carries the scale set's URL and secret
        return service

    return RegistrationCheck(client=fake, actions=factory)


async def _gone(check: RegistrationCheck, fake: FakeClient) -> bool:
    """What the pod step asks when it finds the listener pod dead."""
    listener = await fake.get(AUTOSCALING_LISTENER, KEY)
    pod = await fake.get(POD, KEY)
    return await check.runner_scale_set_gone(listener, pod)


async def _replace_pod(fake: FakeClient, *, dead: bool) -> None:
    await fake.delete(await fake.get(POD, KEY))
    await fake.create(_pod(dead=dead))


async def test_each_dead_pod_is_looked_up_once_however_often_it_is_reconciled_arc_4370() -> None:
    """A crash loop asks the service once per death, never per reconcile."""
    fake = FakeClient([_ars(), _listener(), _pod(dead=True)])
    service = _Service()
    check = _check(fake, service)

    assert [await _gone(check, fake) for _ in range(5)] == [False] * 5
    assert service.lookups == [SCALE_SET_ID]

    await _replace_pod(fake, dead=True)  # the next death: a new pod UID
    assert await _gone(check, fake) is False
    assert service.lookups == [SCALE_SET_ID, SCALE_SET_ID]


async def test_not_found_answers_gone_once_per_death_arc_4370() -> None:
    fake = FakeClient([_ars(), _listener(), _pod(dead=True)])
    service = _Service(_not_found())
    check = _check(fake, service)

    assert await _gone(check, fake) is True
    assert await _gone(check, fake) is False  # the same death is not looked up again
    assert service.lookups == [SCALE_SET_ID]


async def test_a_service_error_is_not_gone_and_not_retried_for_the_same_death_arc_4370() -> None:
    """An outage must neither register again nor hold the crash backoff up with retries."""
    fake = FakeClient([_ars(), _listener(), _pod(dead=True)])
    service = _Service(ActionsError("service unavailable", status=503))
    check = _check(fake, service)

    assert await _gone(check, fake) is False
    assert await _gone(check, fake) is False
    assert service.lookups == [SCALE_SET_ID]


async def test_without_an_actions_client_there_is_no_check_arc_4370() -> None:
    fake = FakeClient([_ars(), _listener(), _pod(dead=True)])
    check = RegistrationCheck(client=fake)
    assert await _gone(check, fake) is False


async def _no_app_config(_: Any) -> Any:
    raise AssertionError("the pod step reads no credentials")


_CONFIG = {"metadata": {"name": f"{NAME}-config", "namespace": NS, "resourceVersion": "1"}}
_ACCOUNT = {"metadata": {"name": NAME, "namespace": NS}}


def _dead_desired_pod(listener: dict[str, Any]) -> dict[str, Any]:
    """The pod the pod step wants, as it is once its listener container exited 1."""
    pod = new_scale_set_listener_pod(listener, _CONFIG, _ACCOUNT, None, options=ListenerBuildOptions())
    pod["status"] = _pod(dead=True)["status"]
    return pod


async def _pod_step_fixture(service: _Service) -> tuple[AutoscalingListenerReconciler, FakeClient]:
    fake = FakeClient([_ars(), _listener()])
    await fake.create(_dead_desired_pod(await fake.get(AUTOSCALING_LISTENER, KEY)))

    async def factory(_: Any) -> _Service:
        return service

    return AutoscalingListenerReconciler(client=fake, app_config=_no_app_config, actions=factory), fake


async def test_the_pod_step_hands_back_a_listener_whose_scale_set_is_gone_arc_4370() -> None:
    """A dead pod whose scale set is gone: the listener is deleted (its finalizer cleans up), no backoff, no count."""
    service = _Service(_not_found())
    reconciler, fake = await _pod_step_fixture(service)
    listener = await fake.get(AUTOSCALING_LISTENER, KEY)
    result = await reconciler.pod.reconcile_pod(listener, _CONFIG, _ACCOUNT, None)

    assert result.requeue_after in (None, 0, 0.0)
    listener = await fake.get(AUTOSCALING_LISTENER, KEY)
    assert listener["metadata"].get("deletionTimestamp")
    assert not (listener.get("status") or {}).get("failureCount")
    assert service.lookups == [SCALE_SET_ID]


async def test_the_pod_step_keeps_the_crash_backoff_when_the_scale_set_exists_arc_4370() -> None:
    """A dead pod whose scale set exists: one lookup, then the ARC #4656 backoff as before."""
    service = _Service()
    reconciler, fake = await _pod_step_fixture(service)
    for _ in range(3):
        listener = await fake.get(AUTOSCALING_LISTENER, KEY)
        await reconciler.pod.reconcile_pod(listener, _CONFIG, _ACCOUNT, None)

    listener = await fake.get(AUTOSCALING_LISTENER, KEY)
    assert not listener["metadata"].get("deletionTimestamp")
    assert listener["status"]["failureCount"] == 1
    assert service.lookups == [SCALE_SET_ID]


async def test_the_scale_set_registers_again_when_the_service_says_not_found() -> None:
    """Upstream's runnerScaleSetGone, which the handed-back listener leads to: only a 404 means gone."""
    fake = FakeClient([_ars()])
    ars = await fake.get(AUTOSCALING_RUNNER_SET, ObjectKey(ARS_NS, "scale-set"))
    for error, gone in ((_not_found(), True), (None, False)):
        service = _Service(error)

        async def factory(_: Any, service: _Service = service) -> _Service:
            return service

        registration = ScaleSetRegistration(client=fake, actions=factory)  # type: ignore[arg-type]
        assert await registration.runner_scale_set_gone(ars) is gone
