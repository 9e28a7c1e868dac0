"""A pydantic-evals task, evaluators of its user's own and the evalward agent that runs the same task, for the
pydantic-evals Dataset tests (`tests/loaders/test_pydantic_evals_dataset.py`, `tests/convert/...`).

| name | what |
| --- | --- |
| `task(inputs)` | the task `Dataset.evaluate_sync` runs: a capital city's sentence for a question (str), `{"answer": a + b}` for `{"a", "b"}`; "Lyon" for France when asked `wrongly` |
| `agent(request)` | evalward's Python agent running `task` on the request's `inputs` (the query when the case has no inputs object) |
| `HasNeedle` | `Evaluator` subclass: whether `needle` (default `"Paris"`) is in the output's text (a bool: an assertion) |
| `LengthScore` | `Evaluator` subclass: the output text's length / `scale` (a number: a score) |
| `Grade` | `Evaluator` subclass: `"long"` or `"short"` (a string: a label) |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_evals.evaluators import Evaluator, EvaluatorContext

CAPITALS = {"France": "Paris", "Italy": "Rome", "Japan": "Tokyo"}


def task(inputs: Any) -> Any:
    if isinstance(inputs, dict):
        return {"answer": inputs["a"] + inputs["b"]}
    text = str(inputs)
    if "wrongly" in text:
        return "The capital of France is Lyon."
    for country, city in CAPITALS.items():
        if country in text:
            return f"The capital of {country} is {city}."
    return "I do not know."


def agent(request: dict[str, Any]) -> Any:
    return task(request["inputs"] or request["query"])


@dataclass
class HasNeedle(Evaluator[Any, Any, Any]):
    needle: str = "Paris"

    def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> bool:
        return self.needle in str(ctx.output)


@dataclass
class LengthScore(Evaluator[Any, Any, Any]):
    scale: float = 100.0

    def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> float:
        return len(str(ctx.output)) / self.scale


@dataclass
class Grade(Evaluator[Any, Any, Any]):
    def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> str:
        return "long" if len(str(ctx.output)) > 25 else "short"


CUSTOM_TYPES = [HasNeedle, LengthScore, Grade]
CUSTOM_PATHS = [f"tests.fakes.pydantic_evals_task:{cls.__name__}" for cls in CUSTOM_TYPES]
