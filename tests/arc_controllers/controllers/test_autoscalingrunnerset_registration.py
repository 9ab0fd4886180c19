"""Recording the Actions service's answer on the AutoscalingRunnerSet: one patch when it changes, none when not.

Python only: `merge_patch` used to skip an empty diff; the registration writes compare first
(`ScaleSetRegistration._annotate`), so moving to reconcilekit's ``merge_from`` kept the request count.
"""

from __future__ import annotations

from typing import Any

from arc_controllers import constants
from arc_controllers.actions.types import RunnerScaleSet
from arc_controllers.api.v1alpha1 import AUTOSCALING_RUNNER_SET
from arc_controllers.controllers.autoscalingrunnerset import AutoscalingRunnerSetReconciler
from reconcilekit.client.interfaces import ObjectKey
from reconcilekit.testing import FakeClient

NAME = NAMESPACE = "test"


class _Actions:
    """The scale set update call only; answers with a fixed scale set."""

    def __init__(self, answer: RunnerScaleSet) -> None:
        self.answer = answer
        self.updates: list[tuple[int, RunnerScaleSet]] = []

    async def update_runner_scale_set(self, runner_scale_set_id: int, scale_set: RunnerScaleSet, /) -> RunnerScaleSet:
        self.updates.append((runner_scale_set_id, scale_set))
        return self.answer


def _ars(group: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingRunnerSet",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "annotations": {
                constants.ANNOTATION_KEY_RUNNER_SCALE_SET_ID: "1",
                constants.ANNOTATION_KEY_GITHUB_RUNNER_GROUP_NAME: group,
                constants.ANNOTATION_KEY_GITHUB_RUNNER_SCALE_SET_NAME: name,
            },
        },
        "spec": {"githubConfigUrl": "https://github.com/owner/repo", "runnerScaleSetName": name},
    }


def _fixture(answer: RunnerScaleSet, *, group: str, name: str) -> tuple[AutoscalingRunnerSetReconciler, FakeClient]:
    client = FakeClient([_ars(group, name)])
    actions = _Actions(answer)

    async def factory(_: Any) -> Any:
        return actions

    reconciler = AutoscalingRunnerSetReconciler(
        client=client, actions=factory, controller_namespace=NAMESPACE, default_listener_image="listener:image"
    )
    return reconciler, client


def _patches(client: FakeClient) -> int:
    return sum(1 for r in client.requests if r.kind == "AutoscalingRunnerSet" and r.verb == "patch")


async def test_an_answer_the_annotations_already_hold_sends_no_patch() -> None:
    """The service answers with the group and name recorded already: nothing is written."""
    answer = RunnerScaleSet(id=1, name="same", runner_group_name="group")
    reconciler, client = _fixture(answer, group="group", name="same")
    ars = await client.get(AUTOSCALING_RUNNER_SET, ObjectKey(NAMESPACE, NAME))

    await reconciler.registration.update_runner_scale_set_runner_group(ars)
    await reconciler.registration.update_runner_scale_set_name(ars)

    assert _patches(client) == 0


async def test_a_new_answer_is_recorded_in_one_patch() -> None:
    """The service moved the scale set: the group and name annotations follow its answer."""
    answer = RunnerScaleSet(id=1, name="renamed", runner_group_name="other")
    reconciler, client = _fixture(answer, group="group", name="same")
    ars = await client.get(AUTOSCALING_RUNNER_SET, ObjectKey(NAMESPACE, NAME))

    await reconciler.registration.update_runner_scale_set_runner_group(ars)

    assert _patches(client) == 1
    stored = await client.get(AUTOSCALING_RUNNER_SET, ObjectKey(NAMESPACE, NAME))
    annotations = stored["metadata"]["annotations"]
    assert annotations[constants.ANNOTATION_KEY_GITHUB_RUNNER_GROUP_NAME] == "other"
    assert annotations[constants.ANNOTATION_KEY_GITHUB_RUNNER_SCALE_SET_NAME] == "renamed"
