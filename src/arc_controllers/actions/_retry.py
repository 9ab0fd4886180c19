"""Sending one request with go-retryablehttp's retry policy and backoff.

Retried: transport errors a retry can fix, 429, status 0 and every 5xx but
501 (plus any extra statuses a call asks for). Waits: a 429/503
``Retry-After`` (seconds or HTTP date) as given, uncapped; otherwise
``wait_min * 2**n`` capped at ``wait_max``, no jitter. After
``retry_max`` retries the last retryable answer is dropped and
`RetriesExhaustedError` raised, unless the caller asked for the last answer.

Ports: github.com/hashicorp/go-retryablehttp v0.7.8 Client.Do, DefaultRetryPolicy, DefaultBackoff
"""

from __future__ import annotations

import dataclasses
import email.utils
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass

import structlog

from arc_controllers.actions.errors import RetriesExhaustedError, request_failed
from arc_controllers.actions.transport import HttpRequest, HttpResponse, Transport, TransportError

log = structlog.get_logger(__name__)

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How often and how patiently one request is sent.

    Ports: the RetryMax, RetryWaitMin, RetryWaitMax and HTTPClient.Timeout of a retryablehttp.Client
    """

    retry_max: int = 4
    """Retries after the first attempt: ``4`` means up to 5 attempts."""

    wait_min: float = 1.0
    """Seconds before the first retry; each later wait doubles."""

    wait_max: float = 30.0
    """Seconds a doubled wait never exceeds (a ``Retry-After`` may)."""

    timeout: float = 300.0
    """Seconds one attempt may take; more than the 50 s long poll."""

    def __post_init__(self) -> None:
        if self.retry_max < 0:
            raise ValueError("retry_max must not be negative")
        if self.wait_min < 0 or self.wait_max < 0 or self.timeout <= 0:
            raise ValueError("wait_min and wait_max must not be negative, timeout must be positive")


def should_retry(response: HttpResponse | None, error: TransportError | None, extra: Collection[int] = ()) -> bool:
    """Tell whether an attempt's outcome is worth another attempt.

    Ports: retryablehttp.DefaultRetryPolicy (plus a call's extra statuses)
    """
    if error is not None:
        return error.retryable
    assert response is not None
    status = response.status
    return status == 429 or status == 0 or (status >= 500 and status != 501) or status in extra


def backoff(policy: RetryPolicy, attempt_number: int, response: HttpResponse | None, *, now: float) -> float:
    """Return the seconds to wait before retry ``attempt_number + 1`` (0-based).

    Args:
        policy: Gives ``wait_min`` and ``wait_max``.
        attempt_number: 0 before the first retry.
        response: The failed attempt's answer, if any (for ``Retry-After``).
        now: Current Unix time in seconds, for an HTTP-date ``Retry-After``.

    Ports: retryablehttp.DefaultBackoff
    """
    if response is not None and response.status in (429, 503):
        after = parse_retry_after(response.header("Retry-After"), now=now)
        if after is not None:
            return after
    wait = policy.wait_min * (2.0**attempt_number)
    return min(wait, policy.wait_max)


def parse_retry_after(value: str, *, now: float) -> float | None:
    """Parse a ``Retry-After`` header: whole seconds or an HTTP date; ``None`` if neither.

    A date in the past gives ``0``.

    Ports: retryablehttp parseRetryAfterHeader
    """
    value = value.strip()
    if not value:
        return None
    if value.lstrip("-").isdigit():
        return max(0.0, float(int(value)))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


async def send_with_retries(
    transport: Transport,
    request: HttpRequest,
    *,
    policy: RetryPolicy,
    sleep: Sleep,
    redact: Callable[[str], str],
    extra_retry_statuses: Collection[int] = (),
    return_last_response: bool = False,
    clock: Callable[[], float] = time.time,
) -> tuple[HttpResponse, int]:
    """Send ``request`` until it succeeds, fails for good, or the budget is spent.

    Args:
        transport: Sends each attempt.
        request: Sent unchanged on every attempt (the body is replayed).
        policy: Retry budget, waits and per-attempt timeout.
        sleep: Awaited between attempts (``asyncio.sleep``; tests pass a recorder).
        redact: Scrubs secrets from error messages.
        extra_retry_statuses: Statuses retried besides the default policy's.
        return_last_response: When retries run out on one of
            ``extra_retry_statuses``, return that answer instead of raising
            (the admin-connection call).
        clock: Unix time in seconds, for ``Retry-After`` dates.

    Returns:
        The answer that ended the loop (any status the policy does not
        retry) and the number of attempts made.

    Raises:
        RetriesExhaustedError: every attempt was retryable and failed.
        ActionsError: a transport error that retrying cannot fix.

    Ports: retryablehttp.Client.Do
    """
    request = dataclasses.replace(request, timeout=policy.timeout)
    attempt = 0
    while True:
        attempt += 1
        response: HttpResponse | None = None
        error: TransportError | None = None
        log.debug("sending request", method=request.method, url=redact(request.url), attempt=attempt)
        try:
            response = await transport.send(request)
        except TransportError as err:
            error = err
        if not should_retry(response, error, extra_retry_statuses):
            if error is not None:
                raise request_failed(
                    request, f"failed to send request: {error}", redact=redact, attempts=attempt
                ) from error
            assert response is not None
            return response, attempt
        if attempt > policy.retry_max:
            break
        wait = backoff(policy, attempt - 1, response, now=clock())
        log.debug(
            "retrying request",
            method=request.method,
            url=redact(request.url),
            attempt=attempt,
            status=response.status if response is not None else None,
            error=redact(str(error)) if error is not None else None,
            wait_seconds=wait,
        )
        await sleep(wait)
    if return_last_response and response is not None and response.status in extra_retry_statuses:
        # Go: the custom policy retried this status without an error, so the answer itself comes back;
        # statuses of the default policy end with its error, as for every other call.
        return response, attempt
    reason = f"unexpected HTTP status {response.status_line}" if response is not None else str(error)
    exhausted = request_failed(
        request,
        f"failed to send request: giving up after {attempt} attempt(s): {reason}",
        redact=redact,
        cls=RetriesExhaustedError,
        attempts=attempt,
    )
    exhausted.status = response.status if response is not None else None
    raise exhausted from error
