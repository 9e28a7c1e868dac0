"""Where the stages meet: load → run → score → (store) → summarise.

Everything here is orchestration; each stage's logic lives in its own package. The CLI, the pytest
plugin and the daemon all call `prepare` + `run_prepared` so a run behaves the same everywhere.

- `options`: `RunOptions`, `prepare` (load, select cases, apply metric overrides, validate criteria) and the
  run's fingerprint;
- `case_result`: a finished case × repetition scored into its `CaseResult` (`score_finished_case`, through
  `metrics.evaluation`), results folded into a run (`finalize`);
- `run`: `run_prepared` (run, score, store as each case completes), `run_blocking`, `run_pair`.

The names below are the package's face: import them from `evalward._pipeline`. A test that patches one of them
for the pipeline's own callers patches the module that looks it up (e.g. `evalward._pipeline.run`).
"""

from evalward._pipeline.case_result import (
    EmptyAnswers,
    finalize,
    played_case,
    score_finished_case,
    warm_up_metrics,
)
from evalward._pipeline.options import (
    MetricsMode,
    PassRule,
    PreparedRun,
    RunOptions,
    apply_metric_overrides,
    apply_step_mode,
    eval_set_info,
    fingerprint_for,
    parse_metric_option,
    prepare,
    run_fingerprint,
    scenario_sets,
    select_run_cases,
    simulator_settings,
    split_metric_options,
    validate_criteria,
    with_judge_identities,
)
from evalward._pipeline.run import (
    PairedRuns,
    ProgressCallback,
    describe_sets,
    new_run_id,
    run_blocking,
    run_pair,
    run_prepared,
    start_judging,
    start_simulator,
)
from evalward.metrics.scoring_context import StepwiseMode

__all__ = [
    "EmptyAnswers",
    "MetricsMode",
    "PairedRuns",
    "PassRule",
    "PreparedRun",
    "ProgressCallback",
    "RunOptions",
    "StepwiseMode",
    "apply_metric_overrides",
    "apply_step_mode",
    "describe_sets",
    "eval_set_info",
    "finalize",
    "fingerprint_for",
    "new_run_id",
    "parse_metric_option",
    "played_case",
    "prepare",
    "run_blocking",
    "run_fingerprint",
    "run_pair",
    "run_prepared",
    "scenario_sets",
    "score_finished_case",
    "select_run_cases",
    "simulator_settings",
    "split_metric_options",
    "start_judging",
    "start_simulator",
    "validate_criteria",
    "warm_up_metrics",
    "with_judge_identities",
]
