"""`evalward ci`: what the GitHub Action runs (the Docker action and the composite `run/` action alike), and
what a laptop runs with the same variables.

The flow, module by module:
- `inputs`: the Action's inputs (`INPUT_<NAME>`, dashes kept) validated and mapped onto `EVALWARD_*`
  variables; `working-directory`; `CiOptions`, everything `evalward ci` can be told.
- `setup`: the `setup` commands that install the agent's dependencies before the evals.
- `ci_flow`: `run_ci` — setup → run → store → gate → report, per event (its docstring has the modes).
- `exit_code`: the verdict → exit code, GitHub states and the `regressions` output (`decide_exit`).
- `render`: the comment, job summary, check run and annotations, rendered by `report/`.
- `artifact`: the results artifact (`write_artifact`, `read_artifact`, shard merging).
- `from_artifact`: `evalward report --from-artifact`, the fork-safe poster of a `workflow_run` job.
Posting itself is `github.publish`, shared with the daemon.
"""

from evalward._ci.artifact import (
    ARTIFACT_MAX_FILE_BYTES,
    ARTIFACT_SCHEMA_VERSION,
    Artifact,
    ArtifactMeta,
    merge_shard_artifacts,
    read_artifact,
    write_artifact,
)
from evalward._ci.ci_flow import run_ci
from evalward._ci.event import GITHUB_RETRY_BUDGET_S, ClientFactory, Mode, ci_context, default_client, event_mode
from evalward._ci.exit_code import REGRESSION_KINDS, Decision, count_regressions, decide_exit
from evalward._ci.failure import report_startup_error
from evalward._ci.from_artifact import report_from_artifact
from evalward._ci.inputs import (
    ACTION_INPUTS,
    DEFAULT_ARTIFACT_DIR,
    DEFAULT_FAIL_ON,
    DEFAULT_NAME,
    FAIL_CLASSES,
    PULL_REQUEST_TARGET_CONSENT,
    CiOptions,
    apply_action_inputs,
    enter_working_directory,
    parse_fail_on,
)
from evalward._ci.render import Link, Rendered, log_annotations, print_untrusted, render_outcome, terminal_report
from evalward._ci.result import CiResult
from evalward._ci.setup import SetupError, run_setup
from evalward.github.publish import (
    COMMENT_MODES,
    CommentMode,
    Posted,
    Target,
    publish,
    recorded_verdict,
    verdict_marker_line,
)

__all__ = [
    "ACTION_INPUTS",
    "ARTIFACT_MAX_FILE_BYTES",
    "ARTIFACT_SCHEMA_VERSION",
    "COMMENT_MODES",
    "DEFAULT_ARTIFACT_DIR",
    "DEFAULT_FAIL_ON",
    "DEFAULT_NAME",
    "FAIL_CLASSES",
    "GITHUB_RETRY_BUDGET_S",
    "PULL_REQUEST_TARGET_CONSENT",
    "REGRESSION_KINDS",
    "Artifact",
    "ArtifactMeta",
    "CiOptions",
    "CiResult",
    "ClientFactory",
    "CommentMode",
    "Decision",
    "Link",
    "Mode",
    "Posted",
    "Rendered",
    "SetupError",
    "Target",
    "apply_action_inputs",
    "ci_context",
    "count_regressions",
    "decide_exit",
    "default_client",
    "enter_working_directory",
    "event_mode",
    "log_annotations",
    "merge_shard_artifacts",
    "parse_fail_on",
    "print_untrusted",
    "publish",
    "read_artifact",
    "recorded_verdict",
    "render_outcome",
    "report_from_artifact",
    "report_startup_error",
    "run_ci",
    "run_setup",
    "terminal_report",
    "verdict_marker_line",
    "write_artifact",
]
