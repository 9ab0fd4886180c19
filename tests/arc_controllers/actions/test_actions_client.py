"""The Actions client over a MockTransport: auth flows, URLs, retries, error mapping, redaction."""

from __future__ import annotations

import asyncio
import json
import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from arc_controllers.actions import (
    ActionsError,
    ActionsExceptionError,
    ActionsNotFoundError,
    GitHubAppAuth,
    HttpRequest,
    HttpResponse,
    JobStillRunningError,
    Label,
    PersonalAccessToken,
    RetriesExhaustedError,
    RetryPolicy,
    RunnerExistsError,
    RunnerNotFoundError,
    RunnerScaleSet,
    TransportError,
    new_client,
)
from arc_controllers.actions.systeminfo import SystemInfo

from .actions_helpers import admin_jwt, json_response, mock_client, with_auth

SCALE_SET = {"id": 1, "name": "ScaleSet", "runnerGroupId": 1, "RunnerSetting": {}, "createdOn": "0001-01-01T00:00:00Z"}


async def ok_scale_set(request: HttpRequest) -> HttpResponse:
    return json_response(200, SCALE_SET)


@pytest.fixture(scope="module")
def app_key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


# Upstream: client_test.go TestNewActionsServiceRequest/"manages authentication"/"client is brand new"
async def test_pat_exchange_sends_the_upstream_requests() -> None:
    """PAT → registration token → admin connection → Bearer admin token on the Actions call."""
    token = admin_jwt()
    client, transport = mock_client(with_auth(ok_scale_set, token=token))
    await client.get_runner_scale_set_by_id(1)
    registration, admin, call = transport.requests
    assert (registration.method, registration.url) == (
        "POST",
        "https://api.github.com/orgs/my-org/actions/runners/registration-token",
    )
    assert registration.header("Authorization") == "Bearer ghp_secretpat0123456789"
    assert registration.header("Content-Type") == "application/vnd.github.v3+json"
    assert admin.url == "https://api.github.com/actions/runner-registration"
    assert admin.header("Authorization") == "RemoteAuth token"
    assert admin.header("Content-Type") == "application/json"
    assert admin.body == b'{"url": "https://github.com/my-org", "runner_event": "register"}\n'
    assert call.url == "https://pipelines.example/tenant/123/_apis/runtime/runnerscalesets/1?api-version=6.0-preview"
    assert call.header("Authorization") == f"Bearer {token}"
    assert call.header("Content-Type") == "application/json"
    assert json.loads(call.header("User-Agent")) == {
        "system": "actions-runner-controller",
        "version": "1.0",
        "commit_sha": "abc",
        "scale_set_id": 0,
        "subsystem": "test",
        "build_version": "v0.4.0",
        "build_commit_sha": "v0.4.0",
        "kind": "scaleset",
    }


async def test_app_exchange_signs_a_jwt_and_uses_the_installation_token(app_key_pem: str) -> None:
    """The App JWT is RS256, iss = client id, iat one minute back, exp nine minutes after iat."""
    now = 1_800_000_000.0
    seen: list[HttpRequest] = []

    async def handle(request: HttpRequest) -> HttpResponse:
        seen.append(request)
        if request.url.endswith("/access_tokens"):
            return json_response(201, {"token": "ghs_installation", "expires_at": "2030-01-01T00:00:00Z"})
        return json_response(200, SCALE_SET)

    app = GitHubAppAuth(client_id="Iv1.abc", installation_id=42, private_key=app_key_pem)
    client, transport = mock_client(with_auth(handle), credentials=app, clock=lambda: now)
    await client.get_runner_scale_set_by_id(1)
    access = transport.requests[0]
    assert access.url == "https://api.github.com/app/installations/42/access_tokens"
    assert access.header("Content-Type") == "application/vnd.github+json"
    public = serialization.load_pem_private_key(app_key_pem.encode(), None).public_key()
    claims = jwt.decode(
        access.header("Authorization").removeprefix("Bearer "),
        public,  # type: ignore[arg-type]
        algorithms=["RS256"],
        options={"verify_exp": False, "verify_iat": False},
    )
    assert claims == {"iat": int(now) - 60, "exp": int(now) - 60 + 540, "iss": "Iv1.abc"}
    assert transport.requests[1].header("Authorization") == "Bearer ghs_installation"


# Upstream: client_test.go TestNewActionsServiceRequest/"manages authentication"/"token is currently valid"
async def test_valid_admin_token_is_reused() -> None:
    """Two calls, one exchange."""
    client, transport = mock_client(with_auth(ok_scale_set))
    await client.get_runner_scale_set_by_id(1)
    await client.get_runner_scale_set_by_id(1)
    assert [r.url.rsplit("/", 1)[-1] for r in transport.requests].count("runner-registration") == 1


# Upstream: client_test.go TestNewActionsServiceRequest/"manages authentication"/"admin token is about to expire"
async def test_admin_token_expiring_within_a_minute_is_renewed_first() -> None:
    """A token expiring in 59 s is renewed before the call; one expiring in 61 s is not."""
    now = time.time()
    for expires_in, exchanges in ((59.0, 2), (61.0, 1)):
        token = admin_jwt(expires_in=expires_in, now=now)
        client, _ = mock_client(with_auth(ok_scale_set, token=token), clock=lambda: now)  # one frozen instant
        await client.get_runner_scale_set_by_id(1)
        await client.get_runner_scale_set_by_id(1)
        assert client.tokens.refreshes == exchanges


async def test_admin_token_without_exp_is_an_error() -> None:
    """Go crashes on a missing exp claim; the port raises."""
    no_exp = jwt.encode({"iss": "x"}, "k" * 32, algorithm="HS256")
    client, _ = mock_client(with_auth(ok_scale_set, token=no_exp))
    with pytest.raises(ActionsError, match="no exp claim"):
        await client.get_runner_scale_set_by_id(1)


# Upstream: client_test.go TestNewActionsServiceRequest/"manages authentication"/"admin token refresh retry"
async def test_runner_registration_401_is_retried() -> None:
    """The admin-connection call retries 401 (default policy + 401/403) and then succeeds."""
    failures = iter([401, 401])

    async def handle(request: HttpRequest) -> HttpResponse:
        if request.url.endswith("/actions/runner-registration"):
            status = next(failures, 201)
            if status != 201:
                return HttpResponse(status=status)
        return await with_auth(ok_scale_set)(request)

    sleeps: list[float] = []
    client, transport = mock_client(handle, sleeps=sleeps)
    await client.get_runner_scale_set_by_id(1)
    assert [r.url for r in transport.requests].count("https://api.github.com/actions/runner-registration") == 3
    assert sleeps == [1.0, 2.0]


# Upstream: client_test.go TestNewActionsServiceRequest/"manages authentication"/"admin token refresh failure"
async def test_registration_token_failure_is_an_error_with_the_request_id() -> None:
    """A non-201 registration answer fails the call; the GitHub request id is in the message."""

    async def handle(request: HttpRequest) -> HttpResponse:
        return json_response(401, {"message": "Bad credentials"}, **{"X-GitHub-Request-Id": "REQ1"})

    client, _ = mock_client(handle)
    with pytest.raises(ActionsError) as caught:
        await client.get_runner_scale_set_by_id(1)
    assert caught.value.github_request_id == "REQ1"
    assert 'status="401 Unauthorized", github_request_id="REQ1"' in str(caught.value)
    assert "failed to get runner registration token (401 Unauthorized)" in str(caught.value)


# Upstream: client_test.go TestNewActionsServiceRequest/"builds the right URL including api version"
@pytest.mark.parametrize(
    ("call", "url"),
    [
        (
            lambda c: c.get_runner_scale_set(1, "my set"),
            "https://pipelines.example/tenant/123/_apis/runtime/runnerscalesets?api-version=6.0-preview&name=my+set&runnerGroupId=1",
        ),
        (
            lambda c: c.get_runner_group_by_name("default"),
            "https://pipelines.example/tenant/123/_apis/runtime/runnergroups/?api-version=6.0-preview&groupName=default",
        ),
        (
            lambda c: c.get_runner_by_name("r-1"),
            "https://pipelines.example/tenant/123/_apis/distributedtask/pools/0/agents?agentName=r-1&api-version=6.0-preview",
        ),
    ],
)
async def test_actions_urls_sort_the_query_and_add_the_api_version(call, url: str) -> None:  # type: ignore[no-untyped-def]
    """Queries are re-encoded form-style with sorted keys; a trailing slash on runnergroups/ stays."""

    async def handle(request: HttpRequest) -> HttpResponse:
        return json_response(200, {"count": 0, "value": []})

    client, transport = mock_client(with_auth(handle))
    with pytest.raises(ActionsError) if "runnergroups" in url else _nothing():
        await call(client)
    assert transport.requests[-1].url == url


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


# Upstream: client_test.go TestGetRunnerScaleSetByID/"Default retries on server error"
async def test_server_errors_are_retried_four_times_with_doubling_waits() -> None:
    """RetryMax 4: five attempts, waits 1, 2, 4, 8 s, then RetriesExhaustedError."""

    async def handle(request: HttpRequest) -> HttpResponse:
        return HttpResponse(status=500)

    sleeps: list[float] = []
    client, transport = mock_client(with_auth(handle), sleeps=sleeps)
    with pytest.raises(RetriesExhaustedError) as caught:
        await client.get_runner_scale_set_by_id(1)
    assert len(transport.requests) == 2 + 5
    assert sleeps == [1.0, 2.0, 4.0, 8.0]
    assert caught.value.attempts == 5
    assert "giving up after 5 attempt(s): unexpected HTTP status 500 Internal Server Error" in str(caught.value)


async def test_waits_are_capped_at_wait_max_but_retry_after_is_not() -> None:
    """Doubling stops at 30 s; a 503 Retry-After of 45 s (or an HTTP date) is used as given."""
    answers = iter(
        [HttpResponse(status=502)] * 6
        + [HttpResponse(status=503, headers={"Retry-After": "45"})]
        + [HttpResponse(status=429, headers={"Retry-After": "Thu, 01 Jan 2099 00:00:10 GMT"})]
    )

    async def handle(request: HttpRequest) -> HttpResponse:
        return next(answers, json_response(200, SCALE_SET))

    sleeps: list[float] = []
    now = 4070908800.0  # 2099-01-01T00:00:00Z
    client, _ = mock_client(with_auth(handle), sleeps=sleeps, retry=RetryPolicy(retry_max=9), clock=lambda: now)
    await client.get_runner_scale_set_by_id(1)
    assert sleeps == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 45.0, 10.0]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 501])
async def test_client_errors_and_501_are_not_retried(status: int) -> None:
    """Only 429, 0 and 5xx but 501 are retried on ordinary calls."""

    async def handle(request: HttpRequest) -> HttpResponse:
        return HttpResponse(status=status)

    client, transport = mock_client(with_auth(handle))
    with pytest.raises(ActionsError) as caught:
        await client.get_runner_scale_set_by_id(1)
    assert caught.value.status == status
    assert len(transport.requests) == 3


async def test_unfixable_transport_error_is_not_retried() -> None:
    """A TLS verification failure fails at once."""

    async def handle(request: HttpRequest) -> HttpResponse:
        raise TransportError("certificate verify failed", retryable=False)

    client, transport = mock_client(with_auth(handle))
    with pytest.raises(ActionsError, match="failed to send request: certificate verify failed") as caught:
        await client.get_runner_scale_set_by_id(1)
    assert (caught.value.attempts, len(transport.requests)) == (1, 3)


@pytest.mark.parametrize(
    ("response", "cls", "text"),
    [
        # Upstream: errors_test.go TestNewRequestResponseError/"empty body returns unknown error"
        (HttpResponse(status=400), ActionsError, "unexpected status code: 400: unknown error"),
        # Upstream: client_test.go TestGetRunnerScaleSetByID/"Error when Content-Type is text/plain"
        (
            HttpResponse(status=400, headers={"Content-Type": "text/plain"}, body=b"example plain text error"),
            ActionsError,
            "example plain text error",
        ),
        # Upstream: errors_test.go TestNewRequestResponseError/"invalid json returns unmarshal error and includes body"
        (
            HttpResponse(status=400, headers={"Content-Type": "application/json"}, body=b"{not json"),
            ActionsError,
            'failed to unmarshal error response body: "{not json"',
        ),
        # Upstream: errors_test.go TestNewRequestResponseError/"unknown json error wraps exception"
        (
            json_response(400, {"typeName": "CSharpExceptionNameHere", "message": "could not do something"}),
            ActionsExceptionError,
            "CSharpExceptionNameHere: could not do something",
        ),
        # Upstream: errors_test.go TestNewRequestResponseError/"known actions exception maps to sentinel error"
        (
            json_response(409, {"typeName": "GitHub.DistributedTask.WebApi.AgentExistsException", "message": "m"}),
            RunnerExistsError,
            "runner exists: m",
        ),
        # Upstream: errors_test.go TestNewRequestResponseError/"agent not found exception maps to sentinel error"
        (
            json_response(404, {"typeName": "AgentNotFoundException", "message": "m"}),
            RunnerNotFoundError,
            "runner not found: m",
        ),
        # Upstream: errors_test.go TestNewRequestResponseError/"job still running exception maps to sentinel error"
        (
            json_response(400, {"typeName": "JobStillRunningException", "message": "m"}),
            JobStillRunningError,
            "job still running: m",
        ),
        # Upstream: client_test.go TestGetRunnerScaleSetByID/"Status code not found"
        (HttpResponse(status=404), ActionsNotFoundError, 'status="404 Not Found"'),
        (
            json_response(404, {"typeName": "RunnerScaleSetNotFoundException", "message": "gone"}),
            ActionsNotFoundError,
            "gone",
        ),
    ],
)
async def test_error_bodies_map_to_typed_errors(response: HttpResponse, cls: type[ActionsError], text: str) -> None:
    """Empty, text/plain, non-JSON and exception bodies become the upstream texts and our classes."""

    async def handle(request: HttpRequest) -> HttpResponse:
        return HttpResponse(
            status=response.status, headers={**response.headers, "ActivityId": "act-1"}, body=response.body
        )

    client, _ = mock_client(with_auth(handle))
    with pytest.raises(cls) as caught:
        await client.remove_runner(7)
    assert type(caught.value) is cls
    assert text in str(caught.value)
    assert str(caught.value).startswith(
        "request DELETE https://pipelines.example/tenant/123/_apis/distributedtask/pools/0/agents/7"
        f'?api-version=6.0-preview failed(status="{response.status_line}", activity_id="act-1")'
    )
    assert caught.value.activity_id == "act-1"


# Upstream: common_client_test.go TestClient_Do/"trims byte order mark from response if present"
async def test_byte_order_mark_is_stripped() -> None:
    """A UTF-8 BOM before the JSON body does not break decoding."""

    async def handle(request: HttpRequest) -> HttpResponse:
        return HttpResponse(status=200, body=b"\xef\xbb\xbf" + json.dumps(SCALE_SET).encode())

    client, _ = mock_client(with_auth(handle))
    assert (await client.get_runner_scale_set_by_id(1)).name == "ScaleSet"


# Upstream: client_test.go TestCreateRunnerScaleSet/"populates labels with the scale set name when none are provided"
async def test_create_scale_set_fills_labels_and_keeps_runner_setting() -> None:
    """No labels: one System label, the name; RunnerSetting and createdOn are always sent."""
    bodies: list[object] = []

    async def handle(request: HttpRequest) -> HttpResponse:
        bodies.append(json.loads(request.body or b"null"))
        return json_response(200, SCALE_SET)

    client, _ = mock_client(with_auth(handle))
    wanted = RunnerScaleSet(name="ScaleSet", runner_group_id=1)
    await client.create_runner_scale_set(wanted)
    assert bodies == [
        {
            "name": "ScaleSet",
            "runnerGroupId": 1,
            "labels": [{"type": "System", "name": "ScaleSet"}],
            "RunnerSetting": {},
            "createdOn": "0001-01-01T00:00:00Z",
        }
    ]
    assert wanted.labels == []  # the caller's object is not changed


# Upstream: client_test.go TestCreateRunnerScaleSet/"preserves caller-provided labels"
async def test_create_scale_set_keeps_given_labels_and_types_them() -> None:
    """Given labels are sent as they are, an empty type becomes System."""
    bodies: list[dict[str, object]] = []

    async def handle(request: HttpRequest) -> HttpResponse:
        bodies.append(json.loads(request.body or b"{}"))
        return json_response(200, SCALE_SET)

    client, _ = mock_client(with_auth(handle))
    await client.create_runner_scale_set(
        RunnerScaleSet(name="s", labels=[Label(type="", name="linux"), Label(type="User", name="gpu")])
    )
    assert bodies[0]["labels"] == [{"type": "System", "name": "linux"}, {"type": "User", "name": "gpu"}]


# Upstream: client_test.go TestCreateRunnerScaleSet/"returns an error when both name and labels are empty"
async def test_create_scale_set_without_name_or_labels_is_refused() -> None:
    """Nothing to label the set with: a client-side error, no request."""
    client, transport = mock_client(with_auth(ok_scale_set))
    with pytest.raises(ValueError, match="must have a name or at least one label"):
        await client.create_runner_scale_set(RunnerScaleSet())
    assert transport.requests == []


async def test_secrets_never_appear_in_reprs_or_error_messages(app_key_pem: str) -> None:
    """PAT, private key, admin token and a JIT config stay out of reprs and of an error echoing them."""
    token = admin_jwt()
    leaked_body = json.dumps({"typeName": "X", "message": f"bad token {token} pat ghp_secretpat0123456789"})

    async def handle(request: HttpRequest) -> HttpResponse:
        return HttpResponse(status=400, headers={"Content-Type": "application/json"}, body=leaked_body.encode())

    client, transport = mock_client(with_auth(handle, token=token))
    with pytest.raises(ActionsError) as caught:
        await client.get_runner_scale_set_by_id(1)
    message = str(caught.value)
    assert token not in message
    assert "ghp_secretpat0123456789" not in message
    assert "[redacted]" in message
    assert "ghp_secretpat0123456789" not in repr(PersonalAccessToken("ghp_secretpat0123456789"))
    app = GitHubAppAuth(client_id="1", installation_id=2, private_key=app_key_pem)
    assert "PRIVATE KEY" not in repr(app)
    assert token not in repr(transport.requests[-1])
    assert "Authorization" in repr(transport.requests[-1])  # the header name only


def test_bad_root_ca_is_refused_at_build_time() -> None:
    """An extra root CA that is not PEM fails when the client is built."""
    with pytest.raises(ValueError, match="failed to parse root certificate"):
        new_client(
            "https://github.com/org", PersonalAccessToken("t"), system_info=SystemInfo(), root_ca="not a certificate"
        )


async def test_debug_info_names_proxy_and_ca_but_no_secret() -> None:
    """DebugInfo reports has_proxy, has_root_ca and the User-Agent."""
    client, _ = mock_client(with_auth(ok_scale_set))
    info = json.loads(client.debug_info())
    assert info["has_proxy"] is False
    assert info["has_root_ca"] is False
    assert json.loads(info["system_info"])["kind"] == "scaleset"
    assert "ghp_" not in client.debug_info()


async def test_runner_registration_5xx_ends_with_the_retry_error() -> None:
    """Only 401/403 come back as the last answer; exhausted 5xx are RetriesExhaustedError as elsewhere."""

    async def handle(request: HttpRequest) -> HttpResponse:
        if request.url.endswith("/actions/runner-registration"):
            return HttpResponse(status=503)
        return await with_auth(ok_scale_set)(request)

    client, transport = mock_client(handle)
    with pytest.raises(RetriesExhaustedError):
        await client.get_runner_scale_set_by_id(1)
    assert [r.url for r in transport.requests].count("https://api.github.com/actions/runner-registration") == 5


async def test_calls_run_concurrently_and_share_one_token_exchange() -> None:
    """Eight calls on one client are in flight at once, and only one admin-token exchange happens.

    Differs from Go, whose Client.mu serialises every call: issue 7 asks for JIT
    registrations of many runners to run concurrently.
    """
    in_flight = 0
    peak = 0
    release = asyncio.Event()

    async def slow_scale_set(request: HttpRequest) -> HttpResponse:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if in_flight == 8:
            release.set()
        await release.wait()
        in_flight -= 1
        return await ok_scale_set(request)

    authed = with_auth(slow_scale_set)

    async def yielding(request: HttpRequest) -> HttpResponse:
        await asyncio.sleep(0.001)  # the token exchange takes time, so callers overlap in it
        return await authed(request)

    client, transport = mock_client(yielding)
    await asyncio.wait_for(asyncio.gather(*(client.get_runner_scale_set_by_id(1) for _ in range(8))), timeout=5)
    assert peak == 8
    assert client.tokens.refreshes == 1
    assert [r.url.rsplit("/", 1)[-1] for r in transport.requests].count("runner-registration") == 1
