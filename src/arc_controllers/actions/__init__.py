"""The GitHub Actions service client: scale sets, JIT configs, runners, message sessions.

Build one with `new_client`; see `arc_controllers.actions.errors` for what
each call raises and `arc_controllers.actions.fake` for a local service to
run it against.

Ports: github.com/actions/scaleset (the client ARC's controllers and listener use)
"""

from arc_controllers.actions._retry import RetryPolicy
from arc_controllers.actions.auth import Credentials, GitHubAppAuth, PersonalAccessToken
from arc_controllers.actions.client import ActionsClient, new_client
from arc_controllers.actions.config import (
    GitHubConfig,
    GitHubScope,
    InvalidGitHubConfigURLError,
    parse_github_config_url,
)
from arc_controllers.actions.errors import (
    ActionsError,
    ActionsExceptionError,
    ActionsNotFoundError,
    JobStillRunningError,
    MessageQueueTokenExpiredError,
    RetriesExhaustedError,
    RunnerExistsError,
    RunnerNotFoundError,
    SessionConflictError,
)
from arc_controllers.actions.proxy import ProxyConfig
from arc_controllers.actions.session import HEADER_SCALE_SET_MAX_CAPACITY, MessageSessionClient, SessionRecovery
from arc_controllers.actions.systeminfo import SystemInfo
from arc_controllers.actions.transport import HttpRequest, HttpResponse, MockTransport, Transport, TransportError
from arc_controllers.actions.types import (
    JobAssigned,
    JobAvailable,
    JobCompleted,
    JobStarted,
    Label,
    RunnerGroup,
    RunnerReference,
    RunnerScaleSet,
    RunnerScaleSetJitRunnerConfig,
    RunnerScaleSetJitRunnerSetting,
    RunnerScaleSetMessage,
    RunnerScaleSetSession,
    RunnerScaleSetStatistic,
    RunnerSetting,
)

__all__ = [
    "HEADER_SCALE_SET_MAX_CAPACITY",
    "ActionsClient",
    "ActionsError",
    "ActionsExceptionError",
    "ActionsNotFoundError",
    "Credentials",
    "GitHubAppAuth",
    "GitHubConfig",
    "GitHubScope",
    "HttpRequest",
    "HttpResponse",
    "InvalidGitHubConfigURLError",
    "JobAssigned",
    "JobAvailable",
    "JobCompleted",
    "JobStarted",
    "JobStillRunningError",
    "Label",
    "MessageQueueTokenExpiredError",
    "MessageSessionClient",
    "MockTransport",
    "PersonalAccessToken",
    "ProxyConfig",
    "RetriesExhaustedError",
    "RetryPolicy",
    "RunnerExistsError",
    "RunnerGroup",
    "RunnerNotFoundError",
    "RunnerReference",
    "RunnerScaleSet",
    "RunnerScaleSetJitRunnerConfig",
    "RunnerScaleSetJitRunnerSetting",
    "RunnerScaleSetMessage",
    "RunnerScaleSetSession",
    "RunnerScaleSetStatistic",
    "RunnerSetting",
    "SessionConflictError",
    "SessionRecovery",
    "SystemInfo",
    "Transport",
    "TransportError",
    "new_client",
    "parse_github_config_url",
]
