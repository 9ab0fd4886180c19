"""No token, JIT config or private key reaches a log line, at debug level, on success or failure."""

from __future__ import annotations

import logging

import pytest
import structlog
from structlog.testing import capture_logs

from arc_controllers.actions import (
    ActionsError,
    Credentials,
    ProxyConfig,
    RetryPolicy,
    RunnerScaleSet,
    RunnerScaleSetJitRunnerSetting,
    SystemInfo,
    new_client,
)
from arc_controllers.actions.fake import FakeActionsService

log = structlog.get_logger(__name__)


@pytest.mark.parametrize("kind", ["app", "pat"])
async def test_no_secret_in_debug_logs_or_errors(kind: str, caplog: pytest.LogCaptureFixture) -> None:
    """Run the whole flow plus failures with debug logging captured; no secret appears anywhere."""
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    errors: list[str] = []
    with capture_logs() as events:
        async with FakeActionsService(poll_hold=0.2, admin_token_ttl=61.0) as fake:
            credentials: Credentials = fake.app if kind == "app" else fake.pat
            async with new_client(
                fake.config_url(),
                credentials,
                system_info=SystemInfo(),
                retry=RetryPolicy(retry_max=1, wait_min=0.001, wait_max=0.001),
                proxy=ProxyConfig(),
            ) as client:
                scale_set = await client.create_runner_scale_set(RunnerScaleSet(name="s", runner_group_id=1))
                jit = await client.generate_jit_runner_config(RunnerScaleSetJitRunnerSetting(name="r"), scale_set.id)
                seen.append(jit.encoded_jit_config)
                session = await client.message_session_client(scale_set.id, "host")
                seen.append(session.session.message_queue_access_token)
                fake.queue_job(labels=["s"])
                message = await session.get_message(0, 1)
                assert message is not None
                await session.delete_message(message.message_id)
                fake.expire_queue_tokens()
                await session.acquire_jobs([m.runner_request_id for m in message.job_available_messages])
                seen.append(session.session.message_queue_access_token)
                fake.expire_admin_tokens()
                fake.inject_status("get_runner", 503, times=None)
                for failing in (client.get_runner_group_by_name("default"), client.get_runner(1)):
                    try:
                        await failing
                    except ActionsError as err:
                        errors.append(str(err))
                        log.exception("call failed")  # as a caller would log it
                await session.close()
            seen.extend(fake.issued_secrets())
    assert len(errors) == 2
    key_lines = [line for line in fake.github.private_key_pem.splitlines() if "-----" not in line]
    secrets = [s for s in seen if s] + key_lines
    texts = [repr(event) for event in events] + [r.getMessage() for r in caplog.records] + errors
    texts += [caplog.text]
    assert len(texts) > 20
    leaks = [(secret[:6], text[:120]) for secret in secrets for text in texts if secret in text]
    assert leaks == []
