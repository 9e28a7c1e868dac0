"""Judge a finished case: build prompts, ask (or read the cache), fold samples, merge into the CaseResult.

`Judging` holds what one run's judges share: the config, one `JudgeClient` per endpoint, the cache and the
usage counters. The pipeline
1. `resolve_all(specs)` before running: every judged criterion gets its model, endpoint and prompt identity
   (no model anywhere → InfrastructureError: "not configured");
2. `probe(judges)`: each endpoint must answer (else InfrastructureError: "unreachable") — both before any
   agent runs, so a judged criterion never ends as a silent pass;
3. `score_judged(case, specs, outputs)` per finished case (`metrics.judged.JudgedMetric` calls it: `Judging`
   is the `metrics.scoring_context.Judge` of a run), and `step_judge(spec)` for judged teacher-forced steps.

Per turn and judged metric (formulas in `evalward.metrics.judge`): the turn's JudgeInput → prompt → s
samples, each looked up in the cache by `cache_key(model, messages, {parameters, response format,
sample index})` and asked when missing (one request for all the cases that need the same key at once,
`judging.inflight`) → parsed → folded. A reply that does not parse is asked again, up to
`UNREADABLE_REPLY_RETRIES` times (the client has already fallen back from structured output to plain JSON
if the server refused it). A judge that cannot be reached after retries, or still answers something
unreadable, makes that metric `error` and the case a `judge_error` (never a zero).
Case score: the mean over the turns where the judge applies (single turn: that turn's score and arithmetic),
folded by `judging.judged_results`.

Two metrics ask differently:
- `hallucinations_v1`: per checked response of the turn, a segmentation request (sample 0) and s labelling
  requests, each cached on its own; the turn's score is the mean over its responses;
- conversation metrics (`rubric_based_multi_turn_trajectory_quality_v1`): s requests per case over the whole
  conversation; the result is attached to the last turn and is the case's result;
- `per_turn_user_simulator_quality_v1` (scenario cases only; not applicable to scripted ones): turn 1 is
  compared with the starting prompt without a request, every later turn gets s requests, and so does the
  ending (the stop signal after the last turn); an ending judged invalid replaces the last turn's result.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from evalward.errors import InfrastructureError
from evalward.judging.cache import JudgeCache, cache_key
from evalward.judging.inflight import SingleFlight
from evalward.judging.judge_client import JudgeCallError, JudgeClient, JudgeUsage
from evalward.judging.judge_config import JudgeConfig
from evalward.judging.judged_results import (
    case_result_from_turns,
    judge_error_result,
    not_simulated_result,
    simulated_user_case_result,
    with_verdict,
)
from evalward.judging.steps import StepJudging
from evalward.metrics.custom import is_custom
from evalward.metrics.judge.fold import fold_samples, sample_details
from evalward.metrics.judge.hallucinations import (
    ResponseStep,
    StepGrounding,
    fold_grounding,
    grounding_prompt,
    hallucination_steps,
    parse_grounding,
    parse_segments,
    segment_prompt,
)
from evalward.metrics.judge.prompts import (
    JudgePrompt,
    applies,
    build_prompt,
    conversation_prompt,
    judge_input,
    prompt_identity,
    starting_prompt_score,
    user_turn_prompt,
)
from evalward.metrics.judge.replies import JudgeReplyError, JudgeVerdict, parse_reply
from evalward.metrics.judge.spec import JudgeSpec, is_conversation_metric, is_judged, judge_spec
from evalward.metrics.registry import needs_judge
from evalward.metrics.scoring import metric_status
from evalward.metrics.scoring_context import CaseScores
from evalward.model import AgentOutput, CaseError, EvalCase, Invocation, MetricResult, MetricSpec
from evalward.model.judge_reply import CachedReply

EXPLANATION_REASONING_CHARS = 600
"""How much of the judge's reasoning an explanation quotes (all of it is in `details`)."""

UNREADABLE_REPLY_RETRIES = 2
"""How many times a reply that does not parse is asked again before the metric becomes a judge error."""

HOW_TO_CONFIGURE_A_JUDGE = (
    "pass --judge-model (EVALWARD_JUDGE_MODEL) with --judge-base-url (or OPENAI_BASE_URL) pointing at an "
    "OpenAI-compatible endpoint, set judge_model_options.judge_model in the criteria, or remove them"
)
"""How a judged criterion gets a model: the run's error and `evalward validate`'s warning say the same."""

T = TypeVar("T")


@dataclass(frozen=True)
class ResolvedJudge:
    """A judged criterion bound to its model and endpoint."""

    spec: JudgeSpec
    model: str
    base_url: str | None
    api_key_env: str
    prompt: str
    """sha256 of the prompt templates and settings (`metrics.judge.prompts.prompt_identity`)."""
    source: MetricSpec | None = None
    """The criterion as configured."""

    def identity(self) -> dict[str, Any]:
        """What the run's fingerprint and the comparability key record about this judge (no secrets)."""
        return {"metric": self.spec.metric, "model": self.model, "prompt": self.prompt[:16]}


@dataclass(frozen=True)
class _Reply:
    """A reply's text, and whether it came from the cache."""

    text: str
    cached: bool


@dataclass(frozen=True)
class _Asked:
    """The parsed replies of one prompt's samples, and how many came from the cache."""

    values: list[Any]
    cached: int


@dataclass(frozen=True)
class _CheckedStep:
    step: ResponseStep
    sentences: tuple[str, ...]
    grounding: StepGrounding | None
    """None when the segmentation found no sentence (the step is not scored, as in ADK)."""
    verdicts: list[JudgeVerdict]
    cached: int
    calls: int


class Judging:
    """The judges of one run (module docstring)."""

    def __init__(
        self,
        config: JudgeConfig,
        *,
        cache: JudgeCache | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.cache = cache
        self.usage = JudgeUsage()
        self._environ = environ if environ is not None else os.environ
        self._clients: dict[tuple[str | None, str], JudgeClient] = {}
        self._flights: SingleFlight[_Reply] = SingleFlight()  # samples being looked up or asked, by cache key
        self.warnings: list[str] = []
        """What the probe noticed (e.g. a model the endpoint does not list), for the run's warnings."""

    # --- before running ---------------------------------------------------------------------------------------

    def resolve(self, spec: MetricSpec) -> ResolvedJudge | None:
        """The judge for `spec`; None when no model is configured for it anywhere."""
        judged = judge_spec(spec)
        model = judged.model or self.config.model
        if model is None:
            return None
        return ResolvedJudge(
            spec=judged,
            model=model,
            base_url=self.config.resolved_base_url(judged.base_url),
            api_key_env=judged.api_key_env or self.config.api_key_env,
            prompt=prompt_identity(judged),
            source=spec,
        )

    def resolve_all(self, specs: Sequence[MetricSpec]) -> list[ResolvedJudge]:
        """Resolve every judged spec; InfrastructureError naming the metrics that have no model, unless the
        config does not require one (`JudgeConfig.require_model`, validation): those are left out."""
        missing = self.unresolved(specs)
        if missing and self.config.require_model:
            raise InfrastructureError(
                f"criteria {', '.join(missing)} need a judge model, and no judge is configured; {HOW_TO_CONFIGURE_A_JUDGE}"
            )
        resolved = [self.resolve(s) for s in specs if _judged_criterion(s)]
        return [r for r in resolved if r is not None]

    def unresolved(self, specs: Sequence[MetricSpec]) -> list[str]:
        """The names (sorted, distinct) of the judged criteria among `specs` that have no model anywhere."""
        return sorted({s.name for s in specs if _judged_criterion(s) and self.resolve(s) is None})

    def client(self, base_url: str | None, api_key_env: str) -> JudgeClient:
        key = (base_url, api_key_env)
        if key not in self._clients:
            self._clients[key] = JudgeClient(
                base_url=base_url,
                api_key=self._environ.get(api_key_env),
                api_key_env=api_key_env,
                concurrency=self.config.concurrency,
                timeout_s=self.config.timeout_s,
                max_retries=self.config.max_retries,
                prices=self.config.prices,
                usage=self.usage,
            )
        return self._clients[key]

    async def probe(self, judges: Sequence[ResolvedJudge]) -> list[str]:
        """Check every endpoint answers; return warnings (a model the endpoint does not list).

        Raises InfrastructureError naming the metrics whose judge is unreachable.
        """
        warnings: list[str] = []
        by_endpoint: dict[tuple[str | None, str], list[ResolvedJudge]] = {}
        for judge in judges:
            by_endpoint.setdefault((judge.base_url, judge.api_key_env), []).append(judge)
        for (base_url, key_env), group in by_endpoint.items():
            client = self.client(base_url, key_env)
            metrics = ", ".join(sorted({j.spec.metric for j in group}))
            try:
                listed = await client.probe(group[0].model, self.config.probe_timeout_s)
            except JudgeCallError as exc:
                hint = "" if self._environ.get(key_env) else f"; ${key_env} is not set"
                raise InfrastructureError(
                    f"criteria {metrics} need a judge, and the judge is unreachable: {exc}{hint}; "
                    "check --judge-base-url / OPENAI_BASE_URL, or remove the judged criteria"
                ) from exc
            for model in sorted({j.model for j in group}):
                if listed and model not in listed:
                    warnings.append(
                        f"judge model {model!r} is not among the models {client.where} lists "
                        f"({', '.join(listed[:5])}{', …' if len(listed) > 5 else ''})"
                    )
        return warnings

    @property
    def waiting(self) -> int:
        """Samples waiting for a reply being asked or looked up (`inflight.SingleFlight.waiting`)."""
        return self._flights.waiting()

    async def aclose(self) -> None:
        self._flights.cancel_all()
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
        if self.cache is not None:
            self.cache.close()

    # --- per case ---------------------------------------------------------------------------------------------

    async def _ask(
        self, judge: ResolvedJudge, prompt: JudgePrompt, index: int, parse: Callable[[str], T]
    ) -> tuple[T, bool]:
        """One sample of `prompt`: from the cache when there, else asked (again while unreadable) and stored
        once it parses. Returns (parsed reply, not asked for this caller: from the cache or a shared request).
        With the cache on, the callers of one key at once share one look-up and request (`inflight`): the reply
        the cache would give them a moment later, given now. Off (`--no-judge-cache`), every sample is asked."""
        parameters = {
            **judge.spec.parameters(),
            "response_format": {"name": prompt.schema_name, "schema": prompt.schema},
            "sample": index,
        }
        key = cache_key(judge.model, [dict(m) for m in prompt.messages], parameters)
        if self.config.cache:
            reply, joined = await self._flights.run(key, lambda: self._reply(judge, prompt, key, parse, cached=True))
            try:
                value = parse(reply.text)
            except JudgeReplyError:
                # A joined caller whose criterion reads the shared reply otherwise than the starter's: it asks on
                # its own, as for a cached reply that no longer parses.
                pass
            else:
                if reply.cached:
                    self.usage.cached += 1
                elif joined:
                    self.usage.shared += 1
                return value, reply.cached or joined
        reply = await self._reply(judge, prompt, key, parse, cached=False)
        return parse(reply.text), False

    async def _reply(
        self, judge: ResolvedJudge, prompt: JudgePrompt, key: str, parse: Callable[[str], object], *, cached: bool
    ) -> _Reply:
        """A reply to `prompt` that `parse` reads: the cached one (when `cached`), else asked, again while it
        does not parse (JudgeReplyError after `UNREADABLE_REPLY_RETRIES`), and stored."""
        if cached and self.cache is not None:
            stored = await self.cache.get(key)
            if stored is not None:
                try:
                    parse(stored.text)
                except JudgeReplyError:
                    pass  # a stored reply this evalward reads differently: ask again
                else:
                    return _Reply(stored.text, cached=True)
        client = self.client(judge.base_url, judge.api_key_env)
        attempt = 0
        while True:
            completion = await client.complete(
                model=judge.model,
                messages=[dict(m) for m in prompt.messages],
                schema_name=prompt.schema_name,
                schema=prompt.schema,
                parameters=judge.spec.parameters(),
            )
            try:
                parse(completion.text)
            except JudgeReplyError:
                if attempt >= UNREADABLE_REPLY_RETRIES:
                    raise
                attempt += 1
                self.usage.unreadable += 1
                continue
            break
        if self.cache is not None:
            await self.cache.put(
                key, judge.model, CachedReply(completion.text, completion.input_tokens, completion.output_tokens)
            )
        return _Reply(completion.text, cached=False)

    async def _samples(
        self, judge: ResolvedJudge, prompt: JudgePrompt, count: int, parse: Callable[[str], T]
    ) -> _Asked:
        """`count` samples of `prompt`, asked concurrently; the first failure is raised."""
        results = await asyncio.gather(
            *(self._ask(judge, prompt, i, parse) for i in range(count)), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result
        pairs = [r for r in results if not isinstance(r, BaseException)]
        return _Asked([value for value, _ in pairs], sum(1 for _, hit in pairs if hit))

    async def judge_turn(
        self, judge: ResolvedJudge, expected: Invocation, actual: AgentOutput, threshold: float | None = None
    ) -> MetricResult | None:
        """The metric's result on one turn; None when it does not apply. Judge failures are `error` results."""
        spec = judge.spec
        if spec.kind == "hallucinations":
            return await self._judge_grounding(judge, expected, actual, threshold)
        item = judge_input(expected, actual)
        if not applies(spec, item):
            return None
        return await self._judge_prompt(judge, build_prompt(spec, item), threshold)

    async def judge_conversation(
        self, judge: ResolvedJudge, turns: Sequence[tuple[Invocation, AgentOutput]], threshold: float | None = None
    ) -> MetricResult:
        """A conversation metric's result: one judgement of the whole conversation (s samples)."""
        result = await self._judge_prompt(judge, conversation_prompt(judge.spec, turns), threshold)
        if result.status == "error":
            return result
        return result.model_copy(
            update={"explanation": f"whole conversation ({len(turns)} turn(s)) judged once: {result.explanation}"}
        )

    async def judge_simulated_user(
        self, judge: ResolvedJudge, case: EvalCase, outputs: Sequence[AgentOutput], threshold: float | None
    ) -> list[MetricResult]:
        """`per_turn_user_simulator_quality_v1` per turn of a played scenario case (module docstring)."""
        scenario = case.scenario
        assert scenario is not None
        played = [(case.turns[t].query, outputs[t]) for t in range(len(outputs))]
        first = starting_prompt_score(scenario, played[0][0])
        results = [
            MetricResult(
                name=judge.spec.metric,
                score=first,
                threshold=threshold,
                status=metric_status(first, threshold, True),
                explanation=with_verdict(
                    "turn 1 is the starting prompt" if first == 1.0 else "turn 1 is not the starting prompt",
                    first,
                    threshold,
                ),
                details={"judge": judge.identity(), "starting_prompt": True},
            )
        ]
        prompts = [user_turn_prompt(judge.spec, scenario, played[:t], played[t][0]) for t in range(1, len(played))]
        prompts.append(user_turn_prompt(judge.spec, scenario, played, judge.spec.stop_signal))
        judged = await asyncio.gather(*(self._judge_prompt(judge, prompt, threshold) for prompt in prompts))
        *turns, ending = judged
        results.extend(turns)
        if ending.status == "error":
            results[-1] = ending
        elif ending.score == 0.0:
            results[-1] = ending.model_copy(
                update={
                    "explanation": f"ending after turn {len(played)} judged wrong (it replaces this turn's result): "
                    f"{ending.explanation}",
                    "details": {**ending.details, "ending": True, "replaced": results[-1].model_dump(mode="json")},
                }
            )
        return results

    async def judge_step(self, judge: ResolvedJudge, prompt: JudgePrompt) -> MetricResult:
        """One teacher-forced step's verdict (`metrics.step_judge`): s samples of `prompt`, cached, folded;
        a judge that fails is an `error` result."""
        return await self._judge_prompt(judge, prompt, None)

    async def _judge_prompt(self, judge: ResolvedJudge, prompt: JudgePrompt, threshold: float | None) -> MetricResult:
        spec = judge.spec
        try:
            asked = await self._samples(judge, prompt, spec.num_samples, lambda text: parse_reply(spec, text))
        except (JudgeCallError, JudgeReplyError) as exc:
            return judge_error_result(judge, exc)
        verdicts: list[JudgeVerdict] = asked.values
        folded = fold_samples(spec, verdicts)
        reasoning = folded.reasoning
        if len(reasoning) > EXPLANATION_REASONING_CHARS:
            reasoning = reasoning[: EXPLANATION_REASONING_CHARS - 1] + "…"
        explanation = f"{folded.explanation}; reasoning: {reasoning}" if reasoning else folded.explanation
        return MetricResult(
            name=spec.metric,
            score=folded.value,
            threshold=threshold,
            status=metric_status(folded.value, threshold, True),
            explanation=with_verdict(explanation, folded.value, threshold),
            details={
                "judge": judge.identity(),
                "reasoning": folded.reasoning,
                "samples": sample_details(verdicts),
                "cached_samples": asked.cached,
            },
        )

    async def _check_step(self, judge: ResolvedJudge, step: ResponseStep) -> _CheckedStep:
        """Segment one response (sample 0), then label its sentences (s samples) and fold them."""
        segmented = await self._samples(judge, segment_prompt(step), 1, parse_segments)
        sentences: tuple[str, ...] = segmented.values[0]
        if not sentences:
            return _CheckedStep(step, sentences, None, [], segmented.cached, 1)
        prompt = grounding_prompt(judge.spec, step, sentences)
        labelled = await self._samples(
            judge, prompt, judge.spec.num_samples, lambda text: parse_grounding(text, sentences)
        )
        verdicts: list[JudgeVerdict] = labelled.values
        grounding = fold_grounding(judge.spec, step, verdicts)
        return _CheckedStep(
            step, sentences, grounding, verdicts, segmented.cached + labelled.cached, 1 + judge.spec.num_samples
        )

    async def _judge_grounding(
        self, judge: ResolvedJudge, expected: Invocation, actual: AgentOutput, threshold: float | None
    ) -> MetricResult | None:
        """`hallucinations_v1` on one turn: mean over its checked responses (`metrics.judge.hallucinations`)."""
        steps = hallucination_steps(judge.spec, expected, actual)
        if not steps:
            return None
        results = await asyncio.gather(*(self._check_step(judge, step) for step in steps), return_exceptions=True)
        checked: list[_CheckedStep] = []
        for outcome in results:
            if isinstance(outcome, JudgeCallError | JudgeReplyError):
                return judge_error_result(judge, outcome)
            if isinstance(outcome, BaseException):
                raise outcome
            checked.append(outcome)
        details: dict[str, Any] = {
            "judge": judge.identity(),
            "responses": [_step_details(c) for c in checked],
            "cached_samples": sum(c.cached for c in checked),
            "judge_calls": sum(c.calls for c in checked),  # cached ones included
        }
        parts = [
            c.grounding.explanation if c.grounding is not None else f"{c.step.describe()}: no sentence to check"
            for c in checked
        ]
        values = [c.grounding.value for c in checked if c.grounding is not None]
        if not values:
            return MetricResult(
                name=judge.spec.metric,
                score=None,
                threshold=threshold,
                status="not_applicable",
                explanation="; ".join(parts),
                details=details,
            )
        value = sum(values) / len(values)
        if len(checked) > 1:
            terms = " + ".join(f"{v:.3f}" for v in values)
            parts.append(f"turn = mean over {len(values)} checked response(s): ({terms})/{len(values)} = {value:.3f}")
        unknown = [c for c in checked if not c.step.position_known]
        if unknown:
            parts.append(
                f"{len(unknown)} intermediate response(s) without a position: checked against all the turn's calls"
            )
        return MetricResult(
            name=judge.spec.metric,
            score=value,
            threshold=threshold,
            status=metric_status(value, threshold, True),
            explanation=with_verdict("; ".join(parts), value, threshold),
            details=details,
        )

    async def score_judged(
        self, case: EvalCase, specs: Sequence[MetricSpec], outputs: Sequence[AgentOutput]
    ) -> CaseScores:
        """Every judged criterion of `specs` on the case's answered turns (`metrics.scoring_context.Judge`)."""
        case_results, turn_results, error = await self.score_case(case, specs, outputs)
        return CaseScores(case_results, turn_results, error)

    def step_judge(self, spec: MetricSpec) -> StepJudging | None:
        """The judge of a step criterion with `match: judge`; None when no model is configured for it."""
        judge = self.resolve(spec)
        return None if judge is None else StepJudging(self, judge)

    async def score_case(
        self, case: EvalCase, specs: Sequence[MetricSpec], outputs: Sequence[AgentOutput]
    ) -> tuple[list[MetricResult], dict[int, list[MetricResult]], CaseError | None]:
        """Judged case-level results, per-turn results and the judge error (if any) of one case."""
        judged = [s for s in specs if is_judged(s.name) and not is_custom(s)]
        turn_results: dict[int, list[MetricResult]] = {}
        case_results: list[MetricResult] = []
        error: CaseError | None = None
        n_turns = min(len(outputs), len(case.turns))
        for metric_spec in judged:
            judge = self.resolve(metric_spec)
            if judge is None:  # resolve_all refused this before the run; kept for direct callers
                raise InfrastructureError(f"{metric_spec.name} needs a judge model, and no judge is configured")
            per_turn: list[MetricResult | None]
            if judge.spec.kind == "user_simulation":
                if case.scenario is None or n_turns == 0:
                    case_results.append(not_simulated_result(metric_spec, judge, case.scenario is None))
                    continue
                per_turn = list(await self.judge_simulated_user(judge, case, outputs[:n_turns], metric_spec.threshold))
            elif is_conversation_metric(metric_spec.name):
                if n_turns == 0:
                    continue
                conversation = [(case.turns[t], outputs[t]) for t in range(n_turns)]
                judged_once = await self.judge_conversation(judge, conversation, metric_spec.threshold)
                # ADK scores the conversation on its last turn; the earlier turns carry no result.
                per_turn = [None] * (n_turns - 1) + [judged_once]
            else:
                per_turn = list(
                    await asyncio.gather(
                        *(
                            self.judge_turn(judge, case.turns[t], outputs[t], metric_spec.threshold)
                            for t in range(n_turns)
                        )
                    )
                )
            for turn, result in enumerate(per_turn):
                if result is not None:
                    turn_results.setdefault(turn, []).append(result)
            if is_conversation_metric(metric_spec.name):
                case_result = case_result_from_turns(metric_spec, judge, [per_turn[-1]])
            elif judge.spec.kind == "user_simulation" and len(per_turn) > 1:
                case_result = simulated_user_case_result(metric_spec, judge, per_turn)
            else:
                case_result = case_result_from_turns(metric_spec, judge, per_turn)
            case_results.append(case_result)
            if case_result.status == "error" and error is None:
                errored_turn = next((t for t, r in enumerate(per_turn) if r is not None and r.status == "error"), None)
                error = CaseError(
                    kind="judge_error", message=f"{metric_spec.name}: {case_result.explanation}", turn=errored_turn
                )
        return case_results, turn_results, error


def _step_details(checked: _CheckedStep) -> dict[str, Any]:
    """What `details.responses[]` keeps about one checked response: every sentence with its label and votes,
    and each labelling sample with the judge's rationale and excerpts."""
    grounding = checked.grounding
    return {
        "kind": checked.step.kind,
        "author": checked.step.author,
        "position_known": checked.step.position_known,
        "score": grounding.value if grounding is not None else None,
        "sentences": [
            {"sentence": sentence, "label": label, "grounded_votes": votes}
            for sentence, label, votes in (grounding.sentences if grounding is not None else ())
        ],
        "samples": [
            {"value": v.value, "label": v.label, "sentences": [dict(n) for n in v.notes]} for v in checked.verdicts
        ],
    }


def _judged_criterion(spec: MetricSpec) -> bool:
    """A judged metric, or a step metric whose steps a judge decides (`metrics.registry.needs_judge`)."""
    return needs_judge(spec)


def judged_specs(specs_per_case: Sequence[Sequence[MetricSpec]]) -> list[MetricSpec]:
    """The distinct judged specs among all cases' specs (by canonical content), in first-seen order."""
    seen: dict[str, MetricSpec] = {}
    for specs in specs_per_case:
        for spec in specs:
            if _judged_criterion(spec):
                seen.setdefault(spec.model_dump_json(), spec)
    return list(seen.values())
