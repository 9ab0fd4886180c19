# ruff: noqa: E501
"""Python only: revert each seed mechanism in turn and check that its test fails (issue 7's mutation check).

Run from the repository root: .venv/bin/python hack/mutation_check.py
Each entry: (seed, file, text to replace, replacement, pytest -k expression).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ERS = "src/arc_controllers/controllers/ephemeralrunnerset/*.py"
ER = "src/arc_controllers/controllers/ephemeralrunner/*.py"
UNREG = "src/arc_controllers/controllers/unregistration.py"
T_ERS = "tests/arc_controllers/controllers/test_ephemeralrunnerset.py"
T_ER = "tests/arc_controllers/controllers/test_ephemeralrunner.py"
T_CRASH = "tests/arc_controllers/controllers/test_runner_crash.py"
LEGACY = "src/arc_controllers/controllers/legacy.py"
T_LEGACY = "tests/arc_controllers/controllers/test_legacy.py"
SCALER = "src/arc_controllers/listener/scaler.py"
T_SCALER = "tests/arc_controllers/listener/test_listener_scaler.py"

MUTATIONS: list[tuple[str, str, str, str, str, str]] = [
    ("1", ERS,
     "        await self.runners.clean_up_ephemeral_runners(runner_set)\n        await self.proxy.reconcile_proxy_secret(runner_set)\n        await self.status.patch_applied",
     "        await self.status.patch_applied_actionable_revision_status(object_key(runner_set), target)\n        await self.runners.clean_up_ephemeral_runners(runner_set)\n        await self.proxy.reconcile_proxy_secret(runner_set)\n        await self.status.patch_applied",
     T_ERS, "seed1"),
    ("2", ERS, "if not semantic_equal(meta.get(\"annotations\"), annotations):",
     "if meta.get(\"annotations\") != annotations:", T_ERS, "seed2"),
    ("3", ERS, "await self.client.status().patch(live, lazy.merge_from(optimistic_lock=True))\n\n        await retry.retry_on_conflict(retry.DEFAULT_BACKOFF, attempt)\n\n    async def update_status",
     "await self.client.status().patch(live, lazy.merge_from())\n\n        await retry.retry_on_conflict(retry.DEFAULT_BACKOFF, attempt)\n\n    async def update_status", T_ERS, "seed3"),
    ("4", ERS, "if int(_status(live).get(\"appliedActionableRevision\") or 0) < target:",
     "if int(_status(live).get(\"appliedActionableRevision\") or 0) != target:", T_ERS, "seed4"),
    ("5", ERS, "            if state.finished:\n                return await self._clean_up_finished_runners(runner_set, state)\n",
     "", T_ERS, "seed5"),
    ("5b", ERS, "        if patch_id == 0:\n            return False\n        if self.api_reader is None:",
     "        if self.api_reader is None:", T_ERS, "seed5_patch_id_zero"),
    ("6", ERS, "            if int(_status(live).get(\"finishedRunnerCleanupPatchID\") or 0) == patch_id:\n                return\n",
     "            if int(_status(live).get(\"finishedRunnerCleanupPatchID\") or 0) >= patch_id:\n                return\n", T_ERS, "seed6"),
    ("7", ERS, "                status.pop(\"finishedRunnerCleanupPatchID\", None)  # Go's 0 with omitempty\n", "", T_ERS, "seed7"),
    ("8", ERS, "            live = await self.api_reader.get(EPHEMERAL_RUNNER_SET, key)\n        except",
     "            live = await self.client.get(EPHEMERAL_RUNNER_SET, key)\n        except", T_ERS, "seed8"),
    ("9", ERS, "scale_up_total = total + len(state.deleting)", "scale_up_total = total", T_ERS, "seed9"),
    ("11", ERS, "        lazy = LazyCopy(runner_set)\n        spec, status",
     "        lazy = LazyCopy(runner_set)\n        lazy.mutate()\n        spec, status", T_ERS, "seed11"),
    ("11b", "src/arc_controllers/controllers/patching.py",
     "        if self._before is None:\n            self._before = copy.deepcopy(self.obj)\n            _snapshots += 1\n",
     "        self._before = copy.deepcopy(self.obj)\n        _snapshots += 1\n", T_ERS, "seed11"),
    ("13", ERS, "        if state.stale_outdated:\n            return await self._replace_stale_outdated(runner_set, state)\n",
     "", T_ERS, "seed13"),
    ("13b", ERS, "        if state.outdated:\n            return await self._release_rejected_spec(runner_set, state)\n",
     "", T_ERS, "seed13"),
    ("14", ERS, "            _status_of(lazy.mutate())[\"finishedRunnerCleanupPatchID\"] = patch_id\n            await self.client.status().patch(live, lazy.merge_from(optimistic_lock=True))",
     "            _status_of(lazy.mutate())[\"finishedRunnerCleanupPatchID\"] = patch_id\n            await self.client.status().patch(live, lazy.merge_from())", T_ERS, "seed14"),
    ("15", ERS, "            runners = await reader.list(EPHEMERAL_RUNNER, namespace=key.namespace)",
     "            runners = await self.client.list(EPHEMERAL_RUNNER, namespace=key.namespace)", T_ERS, "seed15"),
    ("12", ER, "        add_finalizer(obj, _FINALIZER)\n        add_finalizer(obj, _ACTIONS_FINALIZER)",
     "        add_finalizer(obj, _FINALIZER) or add_finalizer(obj, _ACTIONS_FINALIZER)",
     T_ER, "seed12"),
    ("ER-order", ER, "                await self.writes.patch(runner, lazy.merge_from())\n                self._push(runner, rid)",
     "                self._push(runner, rid)\n                await self.writes.patch(runner, lazy.merge_from())",
     T_ER, "patches_the_registration_finalizer_before_pushing"),
    ("ER-lock", ER, "        await self.writes.patch_status(runner, lazy.merge_from(optimistic_lock=True))\n        self._publish_phase(runner, phase)",
     "        await self.writes.patch_status(runner, lazy.merge_from())\n        self._publish_phase(runner, phase)", T_ER, "optimistic_lock or conflict"),
    ("ER-lock-identity", ER, "        )\n        await self.writes.patch_status(runner, lazy.merge_from(optimistic_lock=True))\n\n    # ---- pod state",
     "        )\n        await self.writes.patch_status(runner, lazy.merge_from())\n\n    # ---- pod state", T_ER, "provisions_secret_pod_and_runner_id"),
    ("ER-running", ER, "        phase = current.get(\"phase\") or EphemeralRunnerPhase.PENDING",
     "        phase = \"Running\" if pod_ready(pod) else (current.get(\"phase\") or EphemeralRunnerPhase.PENDING)", T_ER, "never_running"),
    ("ER-selfdereg", ER, "        if _status(runner).get(\"phase\") != EphemeralRunnerPhase.SUCCEEDED:\n            await self._queue_unregistration(runner)",
     "        await self._queue_unregistration(runner)", T_ER, "never_unregistered"),
    ("crash-1", ERS,
     "        await self.runners.clean_up_ephemeral_runners(runner_set)\n        await self.proxy.reconcile_proxy_secret(runner_set)\n        await self.status.patch_applied",
     "        await self.status.patch_applied_actionable_revision_status(object_key(runner_set), target)\n        await self.runners.clean_up_ephemeral_runners(runner_set)\n        await self.proxy.reconcile_proxy_secret(runner_set)\n        await self.status.patch_applied",
     T_CRASH, "crash"),
    ("crash-9", ERS, "scale_up_total = total + len(state.deleting)", "scale_up_total = total", T_CRASH, "crash"),
    ("crash-b", ERS, "                if not is_runner_not_found(err):\n                    raise\n", "                raise\n", T_CRASH, "crash"),
    ("crash-unobserved", ERS, "        state.unobserved = self.runners.observe_created(object_key(runner_set), runners.items)\n", "", T_CRASH, "crash"),
    ("conflict-log", "src/reconcilekit/controller/_controller.py", "                    if _only_conflicts(err):\n",
     "                    if False:\n", "tests/reconcilekit/controller/test_controller.py", "conflict"),
    ("conflict-group", "src/reconcilekit/controller/_controller.py", "                    if _only_conflicts(err):\n",
     "                    if is_conflict(err):\n", "tests/reconcilekit/controller/test_controller.py", "group_of_only_conflicts"),
    ("stale-phase", "src/arc_controllers/controllers/runnerstates.py", "ANNOTATION_KEY_ACTIONABLE_REVISION) < judged_revision:",
     "ANNOTATION_KEY_ACTIONABLE_REVISION) < -1:", "tests/arc_controllers/controllers/test_ephemeralrunnerset_update_status.py", "stale"),
    ("scale-down-continues", ERS, "                if not await self.delete_ephemeral_runner_with_actions_client(runner, actions):\n                    continue\n",
     "                if not await self.delete_ephemeral_runner_with_actions_client(runner, actions):\n                    break\n",
     "tests/arc_controllers/controllers/test_ephemeralrunnerset_parallel.py", "continues"),
    ("pod-release", ER, "    return len(status.get(\"containerStatuses\") or []) == len(containers)\n", "    return True\n",
     "tests/arc_controllers/controllers/test_ephemeralrunner_pod_release.py", "grace_period"),
    ("hook-secrets", ER, "(await self.client.list(gvk, namespace=namespace, labels=labels))",
     "(await self.client.list(gvk, namespace=None, labels=labels))",
     "tests/arc_controllers/controllers/test_ephemeralrunner_hook_cleanup.py", "linked_secrets"),
    ("unobserved", ERS, "        state.unobserved = self.runners.observe_created(object_key(runner_set), runners.items)\n", "", T_ERS, "not_yet_in_the_cache"),
    ("ARS-annotate", "src/arc_controllers/controllers/autoscalingrunnerset/registration.py",
     "        if all(key in current and current[key] == value for key, value in values.items()):\n            return\n", "",
     "tests/arc_controllers/controllers/test_autoscalingrunnerset_registration.py", "no_patch"),
    # Issue 17 item 4: Go ARC's integrity-hash sets adopted (cleanup before the commit point, under the lock).
    ("legacy-order", ERS,
     "            await self.runners.remove_ephemeral_runners(runner_set, cleanup.remove)\n        drop_legacy_hash(lazy.mutate())\n        await self.client.patch(runner_set, lazy.merge_from(optimistic_lock=True))\n",
     "        drop_legacy_hash(lazy.mutate())\n        await self.client.patch(runner_set, lazy.merge_from(optimistic_lock=True))\n        await self.runners.remove_ephemeral_runners(runner_set, cleanup.remove)\n",
     T_LEGACY, "crash_before_the_commit_point"),
    ("legacy-lock", ERS, "        await self.client.patch(runner_set, lazy.merge_from(optimistic_lock=True))\n        log.info(\"adopted",
     "        await self.client.patch(runner_set, lazy.merge_from())\n        log.info(\"adopted", T_LEGACY, "under_the_lock"),
    ("legacy-kept", LEGACY, "    return semantic_equal(_comparable(runner.get(\"spec\")), _comparable(wanted))",
     "    return False", T_LEGACY, "settled"),
    ("legacy-busy", LEGACY, "        elif any(runner is b for b in busy):\n            out.finishing.append(runner)\n", "",
     T_LEGACY, "busy_one_finish"),
    # Issue 20: the listener skips repeated set patches, but never the new patch ID after a JobCompleted
    # (the finished-runner marker lifts only at a new ID) nor the first repeat after a change.
    ("listener-completed", SCALER, "        self.state.mark_dirty(completed=True)\n", "        self.state.mark_dirty()\n",
     T_SCALER, "job_completed_is_always_sent"),
    ("listener-first-repeat", SCALER, "        return self.state.repeated and self.state.is_repeat(count)\n",
     "        return self.state.is_repeat(count)\n", T_SCALER, "repeat_of_a_repeat"),
]


def main() -> int:
    only = set(sys.argv[1:])
    failures = 0
    for seed, path, old, new, test_file, expr in MUTATIONS:
        if only and seed not in only:
            continue
        holders = [p for p in sorted(Path().glob(path)) if old in p.read_text()]
        if len(holders) != 1 or holders[0].read_text().count(old) != 1:
            print(f"seed {seed}: mutation anchor not found exactly once in {path}")
            failures += 1
            continue
        source = holders[0]
        text = source.read_text()
        source.write_text(text.replace(old, new))
        try:
            result = subprocess.run(
                [".venv/bin/pytest", "-q", "-x", "-p", "no:randomly", test_file, "-k", expr],
                capture_output=True,
                text=True,
                check=False,
            )
        finally:
            source.write_text(text)
        caught = result.returncode == 1
        print(f"seed {seed}: {'caught' if caught else 'NOT CAUGHT'} ({result.stdout.strip().splitlines()[-1]})")
        failures += not caught
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
