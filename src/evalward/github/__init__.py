"""GitHub: REST client with the retry rule, event payload readers, App auth, and posting what `report/` rendered.

- `client`: `GitHubClient` (comments, statuses, check runs, pulls, compare, permissions, App auth and hook
  deliveries).
- `sticky`: one PR comment per suite, found by marker and bot author, updated in place.
- `checks`: commit statuses and check runs (in progress, then completed; never two from a retried create).
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
from evalward.github.checks import (
    Annotation,
    create_check_run_once,
    cut_output_text,
    find_check_runs,
    new_external_id,
    post_check_run,
    post_commit_status,
    start_check_run,
)
from evalward.github.client import (
    WRITE_PERMISSIONS,
    GitHubClient,
    GitHubError,
    GitHubPermissionError,
    GitHubUncertainError,
    InstallationToken,
)
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
    "WRITE_PERMISSIONS",
    "ActionsEnv",
    "Annotation",
    "CheckRerequestEvent",
    "CommentResult",
    "EventPayloadError",
    "GitHubClient",
    "GitHubError",
    "GitHubPermissionError",
    "GitHubUncertainError",
    "InstallationEvent",
    "InstallationToken",
    "InstallationTokenCache",
    "LogAnnotation",
    "PullRequestEvent",
    "PushEvent",
    "app_jwt",
    "append_step_summary",
    "create_check_run_once",
    "cut_output_text",
    "emit_annotations",
    "find_check_runs",
    "format_annotation_command",
    "format_outputs",
    "input_env_name",
    "marker_for",
    "new_external_id",
    "parse_event",
    "parse_pull_request",
    "parse_push",
    "post_check_run",
    "post_commit_status",
    "read_inputs",
    "start_check_run",
    "untrusted_block",
    "upsert_sticky_comment",
    "write_outputs",
]
