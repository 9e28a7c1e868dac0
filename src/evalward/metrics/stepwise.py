"""Step-by-step (teacher-forced) metrics over a recorded reference trajectory (docs/metrics.md §6, guide 001).

A turn's reference R = (r_1 … r_m) is read from its `reference_messages`: every assistant message with
tool calls is one step r_j (parallel calls share it), the tool messages after it are its recorded outputs
o_j, and a closing assistant message without calls is the reference final answer.

- **Teacher-forced step j** (j = 1 … m+1, N = m+1 steps): the agent sees the user input plus (r_1, o_1, …,
  r_{j−1}, o_{j−1}) and proposes one next action â_j.
  j ≤ m: c_j = 1 iff â_j's calls match r_j's calls, else 0. With `match: exact` (the default) they must be
  equal **as a multiset** (same size and a perfect matching under M = same name ∧ arguments equal after
  JSON normalisation); with `match: judge` an LLM judge decides whether they are sufficiently similar
  (`evalward.judging.steps`; an exact match needs no judge, no calls at all is 0 without asking).
  j = m+1: c_j = 1 iff â_j makes no call and the final response passes: `final_response_ok` (exact) or
  the judge finds it factually correct according to the reference answer (judge).
- **stepwise_score** = (1/N) Σ_j c_j.
- **first_error_step** j* = min{j : c_j = 0} (1-based), or N+1 when every step is right.
- **survived_until** = (j* − 1)/N: the share of steps survived before the first error, 1.0 without one
  (guide 001's `survived_until`: index of the first failing step, 0-based, over N).
  `teacher_forced_survival` is another name for the same number (the name evalward used first); a
  criterion written with it is scored and reported under that name.
- **free_running_survival**: the normal (free) run's calls, grouped into steps, against R:
  s = max{j : step i matches r_i exactly for all i ≤ j}; survival = s/m (1.0 when m = 0). Before this
  name existed, this number was reported as `survived_until`.
- **divergence_index** = s+1, reported with the action taken there; when the run followed every reference
  step and then answered, there is no divergence and the value is m+1.

Grouping a run's calls into steps: by `ToolCall.step` when every call carries one (parallel calls share
it); otherwise call by call, each reference step taking as many calls as it has.

Worked example (guide 001's Dune question, m = 3 search steps then the answer "45", N = 4): the agent gets
steps 1, 3 and 4 right and step 2 wrong, c = (1, 0, 1, 1) → stepwise = 3/4 = 0.75, j* = 2,
survived_until = (2 − 1)/4 = 0.25. Its free run searched r_1, then something else: s = 1,
free_running_survival = 1/3 = 0.333, divergence index 2.
docs/metrics.md §6's: m = 2, c = (1, 0, 1) → stepwise = 2/3 = 0.667, j* = 2, survived_until = 1/3 = 0.333.

The case score of each metric is the mean over the turns that carry a reference (as for every turn metric).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evalward.metrics.args import ArgsRule, args_match
from evalward.metrics.base import Score, TurnContext
from evalward.metrics.matching import compat_matrix, maximum_matching
from evalward.metrics.registry import STEP_METRIC_NAMES, STEPWISE_ALIASES, get_metric
from evalward.metrics.scoring import metric_status
from evalward.model import AgentOutput, EvalCase, Invocation, Message, MetricResult, MetricSpec, ToolCall
from evalward.model.text import format_call

BOUNDED_METRICS: frozenset[str] = frozenset(
    {"stepwise_score", "survived_until", "teacher_forced_survival", "free_running_survival"}
)
"""Step metrics in [0, 1] (a threshold outside is refused)."""

DESCRIPTIONS: dict[str, str] = {
    "stepwise_score": "teacher forcing: share of the N = m+1 steps whose next action the agent got right",
    "first_error_step": "teacher forcing: first step j* the agent got wrong (N+1 if none)",
    "survived_until": "teacher forcing: steps survived before the first error, (j* - 1)/N",
    "teacher_forced_survival": "another name for survived_until",
    "free_running_survival": "free run: reference steps followed before the first divergence, s/m",
    "divergence_index": "free run: the step s+1 where the run left the reference",
}

MatchMode = Literal["exact", "judge"]
MATCH_MODES: tuple[str, ...] = ("exact", "judge")

RESPONSE_METRICS: tuple[str, ...] = (
    "response_match_score",
    "response_exact",
    "response_contains",
    "response_regex",
    "response_rouge1",
)
"""Response metrics a case may carry; the first with a threshold decides the final teacher-forced step."""


class ReferenceError(ValueError):
    """A reference trajectory that cannot be read as steps (the message says which message and why)."""


@dataclass(frozen=True)
class ReferenceStep:
    """r_j: the calls of one assistant message, and o_j: the tool messages answering them."""

    calls: tuple[ToolCall, ...]
    outputs: tuple[Message, ...]

    def signature(self) -> str:
        return action_signature(self.calls, None)


@dataclass(frozen=True)
class Reference:
    """A turn's reference: the input messages before the first step, the steps, the final answer."""

    lead: tuple[Message, ...]
    steps: tuple[ReferenceStep, ...]
    final_response: str | None

    @property
    def m(self) -> int:
        return len(self.steps)

    def prefix(self, j: int) -> list[Message]:
        """The messages of steps 1 … j−1 (assistant calls, then their outputs), for teacher-forced step j.

        Every call carries an id and every output the id of the call it answers, as chat APIs and LangGraph's
        tool messages need: a call recorded without one gets `ref_{step}_{k}`, and an output without one
        answers the step's k-th call (k = its position among the step's outputs)."""
        messages: list[Message] = []
        for number, step in enumerate(self.steps[: j - 1], start=1):
            calls = [c if c.id else c.model_copy(update={"id": f"ref_{number}_{k}"}) for k, c in enumerate(step.calls)]
            messages.append(Message(role="assistant", content=None, tool_calls=calls))
            for k, output in enumerate(step.outputs):
                if output.tool_call_id is None and k < len(calls):
                    output = output.model_copy(
                        update={"tool_call_id": calls[k].id, "name": output.name or calls[k].name}
                    )
                messages.append(output)
        return messages


def parse_reference(messages: Sequence[Message]) -> Reference:
    """Read `reference_messages` as steps (module docstring); ReferenceError points at the bad message."""
    lead: list[Message] = []
    steps: list[ReferenceStep] = []
    final: str | None = None
    index = 0
    while index < len(messages) and messages[index].role in ("system", "user"):
        lead.append(messages[index])
        index += 1
    while index < len(messages):
        message = messages[index]
        where = f"reference_messages[{index}]"
        if final is not None:
            raise ReferenceError(
                f"{where}: nothing may follow the final assistant answer (found role {message.role!r})"
            )
        if message.role != "assistant":
            raise ReferenceError(
                f"{where}: expected an assistant message (a step or the final answer), found role {message.role!r}"
            )
        if not message.tool_calls:
            final = message.content or ""
            index += 1
            continue
        calls = tuple(message.tool_calls)
        ids = {c.id for c in calls if c.id}
        outputs: list[Message] = []
        index += 1
        while index < len(messages) and messages[index].role == "tool":
            output = messages[index]
            if output.tool_call_id and ids and output.tool_call_id not in ids:
                raise ReferenceError(
                    f"reference_messages[{index}]: tool result for call id {output.tool_call_id!r}, "
                    f"which the step before does not make (its ids: {', '.join(sorted(ids))})"
                )
            outputs.append(output)
            index += 1
        steps.append(ReferenceStep(calls=calls, outputs=tuple(outputs)))
    return Reference(lead=tuple(lead), steps=tuple(steps), final_response=final)


# --- one action ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NextAction:
    """What the agent proposed at one teacher-forced step: calls (one model step) or a final response."""

    calls: tuple[ToolCall, ...] = ()
    response: str | None = None
    error: str | None = None
    """Set when the agent failed at this step (the step then scores 0)."""

    def signature(self) -> str:
        if self.error is not None:
            return f"error: {self.error}"
        return action_signature(self.calls, self.response)


def action_signature(calls: Sequence[ToolCall], response: str | None) -> str:
    """`[f(a=1), g()]` for calls, `answer "…"` for a response without calls."""
    if calls:
        return "[" + ", ".join(format_call(c.name, c.args) for c in calls) + "]"
    if response is None:
        return "no action"
    text = " ".join(response.split())
    return f'answer "{text if len(text) <= 60 else text[:59] + "…"}"'


def first_step(output: AgentOutput, expected_size: int) -> NextAction:
    """The first action in an agent's output: the calls sharing the smallest `step` when calls carry steps;
    otherwise the first `expected_size` calls (at least one); no calls → the response."""
    calls = list(output.tool_calls)
    if not calls:
        return NextAction(response=output.response)
    if all(c.step is not None for c in calls):
        first = min(c.step for c in calls if c.step is not None)
        return NextAction(calls=tuple(c for c in calls if c.step == first))
    return NextAction(calls=tuple(calls[: max(expected_size, 1)]))


def same_multiset(actual: Sequence[ToolCall], expected: Sequence[ToolCall], rule: ArgsRule | None = None) -> bool:
    """|A| = |E| and a perfect matching exists under M (name equal ∧ args equal after normalisation)."""
    if len(actual) != len(expected):
        return False
    rule = rule or ArgsRule()
    compat = compat_matrix(
        list(actual), list(expected), lambda a, e: a.name == e.name and args_match(a.args, e.args, rule)
    )
    return len(maximum_matching(compat, len(expected))) == len(expected)


FinalCheck = Callable[[str | None], tuple[bool, str]]
"""Whether a final response passes, with a short reason."""


def step_credit(j: int, reference: Reference, action: NextAction, final_check: FinalCheck) -> tuple[float, str]:
    """c_j and a one-line note (`step 2: expected [f(a=1)], got [g()] -> 0`)."""
    if action.error is not None:
        return 0.0, f"step {j}: the agent failed: {action.error} -> 0"
    if j <= reference.m:
        expected = reference.steps[j - 1]
        ok = same_multiset(action.calls, expected.calls)
        verdict = "=" if ok else "!="
        return (1.0 if ok else 0.0), f"step {j}: {action.signature()} {verdict} {expected.signature()} -> {int(ok)}"
    if action.calls:
        return 0.0, f"step {j} (final): expected an answer, got calls {action.signature()} -> 0"
    ok, why = final_check(action.response)
    return (1.0 if ok else 0.0), f"step {j} (final): {action.signature()}: {why} -> {int(ok)}"


# --- free running ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FreeRun:
    """The normal run against the reference: s steps followed, and where it diverged."""

    s: int
    m: int
    divergence_index: int | None
    action_at_divergence: str | None

    @property
    def survival(self) -> float:
        return self.s / self.m if self.m else 1.0


def group_steps(calls: Sequence[ToolCall], reference: Reference) -> list[tuple[ToolCall, ...]]:
    """The run's calls as steps (module docstring: by `step` when all calls carry one, else by reference sizes)."""
    if calls and all(c.step is not None for c in calls):
        groups: dict[int, list[ToolCall]] = {}
        for call in calls:
            assert call.step is not None
            groups.setdefault(call.step, []).append(call)
        return [tuple(group) for group in groups.values()]
    grouped: list[tuple[ToolCall, ...]] = []
    position = 0
    for step in reference.steps:
        if position >= len(calls):
            break
        grouped.append(tuple(calls[position : position + len(step.calls)]))
        position += len(step.calls)
    grouped.extend((call,) for call in calls[position:])
    return grouped


def free_run(output: AgentOutput, reference: Reference) -> FreeRun:
    """s, survival and the divergence of a normal run (module docstring)."""
    groups = group_steps(output.tool_calls, reference)
    s = 0
    while s < reference.m and s < len(groups) and same_multiset(groups[s], reference.steps[s].calls):
        s += 1
    if s < reference.m:
        action = action_signature(groups[s], None) if s < len(groups) else action_signature((), output.response)
        return FreeRun(s, reference.m, s + 1, action)
    if len(groups) > reference.m:
        return FreeRun(s, reference.m, s + 1, action_signature(groups[s], None))
    return FreeRun(s, reference.m, None, None)


# --- scores ----------------------------------------------------------------------------------------------------


def stepwise_scores(
    credits: Sequence[float],
    notes: Sequence[str],
    run: FreeRun,
    step_details: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Score]:
    """The step metrics of one turn from its teacher-forced credits c_1 … c_N (N = m+1) and its free run;
    `step_details[j-1]` (e.g. a judge's verdict and reasoning) joins step j's entry in `details.steps`."""
    n = len(credits)  # N = m + 1
    total = sum(credits)
    stepwise = total / n
    first_error = next((j for j, c in enumerate(credits, start=1) if c == 0), n + 1)
    survival = (first_error - 1) / n
    c_text = "(" + ", ".join(f"{c:g}" for c in credits) + ")"
    extra = list(step_details) if step_details is not None else [{} for _ in credits]
    steps = [
        {"step": j, "credit": c, "note": note, **more}
        for j, (c, note, more) in enumerate(zip(credits, notes, extra, strict=True), 1)
    ]
    shared: dict[str, Any] = {"steps": steps, "m": n - 1}
    judged = [
        f"step {entry['step']} {entry['judge']['verdict']}: {_short(str(entry['judge'].get('reasoning', '')))}"
        for entry in steps
        if isinstance(entry.get("judge"), Mapping)
    ]
    judged_text = f"; judge: {' | '.join(judged)}" if judged else ""
    j_text = f"j*={first_error}" + (" (no error: N+1)" if first_error == n + 1 else "")
    if run.divergence_index is None:
        divergence, d_text = float(run.m + 1), f"followed all {run.m} reference step(s): no divergence"
    else:
        divergence = float(run.divergence_index)
        d_text = f"diverged at step {run.divergence_index} with {run.action_at_divergence}"
    free = {"s": run.s, "m": run.m, "divergence_index": run.divergence_index, "action": run.action_at_divergence}
    m_text = f"{run.m}" if run.m else "0 (no steps: 1.0)"
    survived = Score(
        survival,
        f"c={c_text}, {j_text}: (j*-1)/N = {first_error - 1}/{n} = {survival:.3f}{judged_text}",
        {"first_error_step": first_error, "n": n},
    )
    return {
        "stepwise_score": Score(stepwise, f"c={c_text}: {total:g}/{n}={stepwise:.3f}{judged_text}", shared),
        "first_error_step": Score(float(first_error), f"c={c_text}: {j_text}", {"first_error_step": first_error}),
        "survived_until": survived,
        "free_running_survival": Score(run.survival, f"s={run.s}, m={m_text}: s/m = {run.survival:.3f}", free),
        "divergence_index": Score(divergence, d_text, free),
    }


JUDGE_REASONING_CHARS = 160
"""How much of a step judge's reasoning the explanations quote (all of it is in `details.steps`)."""


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= JUDGE_REASONING_CHARS else flat[: JUDGE_REASONING_CHARS - 1] + "…"


def final_check_for(case: EvalCase, turn: int, specs: Sequence[MetricSpec], reference: Reference) -> FinalCheck:
    """The final-step rule: the case's first response metric with a threshold (RESPONSE_METRICS), scored
    against the reference final answer (else the turn's expected response); without one, any non-empty
    response passes."""

    expected = case.turns[turn]
    reference_text = reference.final_response if reference.final_response is not None else expected.expected_response
    spec = next((s for s in specs if s.name in RESPONSE_METRICS and s.threshold is not None), None)

    def check(response: str | None) -> tuple[bool, str]:
        if spec is None or reference_text is None:
            ok = bool(response and response.strip())
            return ok, "answered" if ok else "empty answer"
        metric = get_metric(spec.name)
        invocation = expected.model_copy(update={"expected_response": reference_text})
        ctx: TurnContext[Any] = TurnContext(
            case=case, turn=turn, expected=invocation, actual=AgentOutput(response=response), spec=spec
        )
        score = metric.score_turn(ctx)
        if inspect.isawaitable(score):  # RESPONSE_METRICS are evalward's own, scored in place
            raise TypeError(f"{spec.name} is async: it cannot check a teacher-forced final answer")
        if score is None:
            return bool(response), f"{spec.name} not applicable"
        assert spec.threshold is not None
        ok = score.value >= spec.threshold if metric.higher_is_better else score.value <= spec.threshold
        return ok, f"{spec.name} {score.value:.3f} {'meets' if ok else 'misses'} {spec.threshold:g}"

    return check


def metric_results(
    per_turn: Mapping[int, Mapping[str, Score]], specs: Mapping[str, MetricSpec]
) -> tuple[list[MetricResult], dict[int, list[MetricResult]]]:
    """Case-level and per-turn MetricResults for the step metrics.

    Thresholds come from `specs` (by name); a metric without a spec is informational. A criterion named by
    an alias (`teacher_forced_survival`) is reported under that name too, with its metric's value. The case
    value is the mean over the turns with a reference; a single such turn keeps its own arithmetic.
    """
    names = [*STEP_METRIC_NAMES, *(alias for alias in STEPWISE_ALIASES if alias in specs)]
    turn_results: dict[int, list[MetricResult]] = {turn: [] for turn in per_turn}
    case_results: list[MetricResult] = []
    for name in names:
        source = STEPWISE_ALIASES.get(name, name)
        threshold = specs[name].threshold if name in specs else None
        scored: list[tuple[int, Score]] = [(t, scores[source]) for t, scores in sorted(per_turn.items())]
        for turn, score in scored:
            turn_results[turn].append(_result(name, score.value, threshold, score.explanation, score.details))
        if not scored:
            case_results.append(
                MetricResult(
                    name=name,
                    score=None,
                    threshold=threshold,
                    status="not_applicable",
                    explanation="not applicable: no turn carries reference_messages",
                )
            )
            continue
        if len(scored) == 1:
            _, only = scored[0]
            case_results.append(_result(name, only.value, threshold, only.explanation, only.details))
            continue
        values = [s.value for _, s in scored]
        mean = sum(values) / len(values)
        terms = " + ".join(f"{v:.3f}" for v in values)
        explanation = f"mean over {len(values)} turn(s) with a reference: ({terms})/{len(values)} = {mean:.3f}"
        details = {"turn_scores": {str(t): s.value for t, s in scored}}
        case_results.append(_result(name, mean, threshold, explanation, details))
    return case_results, turn_results


def error_results(specs: Mapping[str, MetricSpec], message: str) -> list[MetricResult]:
    """Every step metric (and named alias) as an `error` result, when a turn's steps could not be scored
    (a judge that failed): never a silent zero."""
    names = [*STEP_METRIC_NAMES, *(alias for alias in STEPWISE_ALIASES if alias in specs)]
    return [
        MetricResult(
            name=name,
            score=None,
            threshold=specs[name].threshold if name in specs else None,
            status="error",
            explanation=message,
        )
        for name in names
    ]


def _result(
    name: str, value: float, threshold: float | None, explanation: str, details: dict[str, Any]
) -> MetricResult:
    return MetricResult(
        name=name,
        score=value,
        threshold=threshold,
        status=metric_status(value, threshold, True),
        explanation=explanation,
        details=dict(details),
    )


def reference_for(invocation: Invocation) -> Reference | None:
    """The turn's parsed reference, or None when it carries no `reference_messages`."""
    if invocation.reference_messages is None:
        return None
    return parse_reference(invocation.reference_messages)
