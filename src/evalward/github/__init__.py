"""GitHub: REST client with the retry rule, event payload readers, App auth, and posting what `report/` rendered.

- `client`: `GitHubClient` (comments, statuses, check runs, pulls, compare, installation tokens).
- `sticky`: one PR comment per suite, found by marker and bot author, updated in place.
- `checks`: commit statuses and check runs with batched annotations.
- `actions`: the Actions runtime (env, inputs, outputs, job summary, log annotations).
- `events`: lenient readers of webhook/event payloads.
- `app_auth`: the App's JWT and cached installation tokens.
"""

from evalward.github.actions import (
    ActionsEnv,
    LogAnnotation,
    append_step_summary,
    emit_annotations,
    format_annotation_command,
    format_outputs,
    input_env_name,
    read_inputs,
    untrusted_block,
    write_outputs,
)
from evalward.github.app_auth import InstallationTokenCache, app_jwt
from evalward.github.checks import Annotation, cut_output_text, post_check_run, post_commit_status
from evalward.github.client import GitHubClient, GitHubError, GitHubPermissionError, InstallationToken
from evalward.github.events import (
    CheckRerequestEvent,
    EventPayloadError,
    InstallationEvent,
    PullRequestEvent,
    PushEvent,
    parse_event,
    parse_pull_request,
    parse_push,
)
from evalward.github.sticky import CommentResult, marker_for, upsert_sticky_comment

__all__ = [
    "ActionsEnv",
    "Annotation",
    "CheckRerequestEvent",
    "CommentResult",
    "EventPayloadError",
    "GitHubClient",
    "GitHubError",
    "GitHubPermissionError",
    "InstallationEvent",
    "InstallationToken",
    "InstallationTokenCache",
    "LogAnnotation",
    "PullRequestEvent",
    "PushEvent",
    "app_jwt",
    "append_step_summary",
    "cut_output_text",
    "emit_annotations",
    "format_annotation_command",
    "format_outputs",
    "input_env_name",
    "marker_for",
    "parse_event",
    "parse_pull_request",
    "parse_push",
    "post_check_run",
    "post_commit_status",
    "read_inputs",
    "untrusted_block",
    "upsert_sticky_comment",
    "write_outputs",
]
