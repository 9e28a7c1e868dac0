"""evalward inside pytest: `evaluate` / `evaluate_async`, with parity to ADK's `AgentEvaluator.evaluate`.

    from evalward.testing import evaluate

    def test_shop_agent():
        evaluate(agent="shop.agent:root_agent", eval_set="tests/evals/", num_runs=2)

A test fails with one `AssertionError` listing every failing case and metric. With the pytest plugin
(`evalward.testing.plugin`, registered as the `evalward` pytest11 entry point), `--evalward-json PATH`
writes every run of the session as one run JSON for `evalward gate` / `evalward import`.

The plugin imports this package in every pytest run, so nothing heavy is imported here: the
implementation (`_evaluate`, which imports the pipeline) is loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalward.testing._evaluate import evaluate, evaluate_async

__all__ = ["evaluate", "evaluate_async"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        # start-up: the pytest plugin imports this package in every session; the run pipeline loads on first use.
        from evalward.testing import _evaluate

        return getattr(_evaluate, name)
    raise AttributeError(f"module 'evalward.testing' has no attribute {name!r}")
