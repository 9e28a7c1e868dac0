"""Builders for small eval sets in tests: `make_case("c1", "hi", "bye")`, `make_set(case, ...)`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalward.model import EvalCase, EvalSet, Invocation, SessionInput


def make_case(
    case_id: str,
    *queries: str,
    inputs: dict[str, Any] | Sequence[dict[str, Any]] | None = None,
    state: dict[str, Any] | None = None,
    expected_response: str | None = None,
) -> EvalCase:
    """A case with one turn per query (default one turn, query = case id).

    `inputs` is either one dict used by every turn or a list with one dict per turn; `state` becomes the
    case's initial session state.
    """
    texts = list(queries) or [case_id]
    per_turn = list(inputs) if isinstance(inputs, Sequence) else [dict(inputs or {}) for _ in texts]
    if len(per_turn) != len(texts):
        raise ValueError(f"make_case({case_id!r}): {len(texts)} queries but {len(per_turn)} inputs")
    turns = [
        Invocation(
            invocation_id=f"{case_id}-t{i}", query=q, inputs=dict(per_turn[i]), expected_response=expected_response
        )
        for i, q in enumerate(texts)
    ]
    session = SessionInput(state=state) if state is not None else None
    return EvalCase(case_id=case_id, turns=turns, session_input=session)


def make_set(*cases: EvalCase, eval_set_id: str = "set") -> EvalSet:
    """A native eval set holding `cases`."""
    return EvalSet(eval_set_id=eval_set_id, format="native", cases=list(cases))


def many_cases(count: int, *, prefix: str = "case", inputs: dict[str, Any] | None = None) -> list[EvalCase]:
    """`count` one-turn cases named `<prefix>-000`, `<prefix>-001`, … (query = case id)."""
    return [make_case(f"{prefix}-{i:03d}", inputs=inputs) for i in range(count)]
