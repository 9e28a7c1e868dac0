"""Judge a finished case: build prompts, ask (or read the cache), fold samples, merge into the CaseResult.

`Judging` holds what one run's judges share: the config, one `JudgeClient` per endpoint, the cache and the
usage counters. The pipeline
1. `resolve_all(specs)` before running: every judged criterion gets its model, endpoint and prompt identity
   (no model anywhere → InfrastructureError: "not configured");
2. `probe(judges)`: each endpoint must answer (else InfrastructureError: "unreachable") — both before any
   agent runs, so a judged criterion never ends as a silent pass;
3. `apply_judges(result, case, specs, outputs, judging)` per finished case.

Per turn and judged metric (formulas in `evalward.metrics.judge`): the turn's JudgeInput → prompt → s
samples, each looked up in the cache by `cache_key(model, messages, {parameters, response format,
sample index})` and asked when missing → parsed → folded. A judge that cannot be reached after retries, or
answers something unreadable, makes that metric `error` and the case a `judge_error` (never a zero).
Case score: the mean over the turns where the judge applies (single turn: that turn's score and arithmetic).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalward.errors import InfrastructureError
from evalward.judging.cache import CachedReply, JudgeCache, cache_key
from evalward.judging.client import JudgeCallError, JudgeClient, JudgeUsage, Sleep
from evalward.judging.config import JudgeConfig
from evalward.judging.merge import merge_metric_results
from evalward.metrics.judge import (
    JudgeReplyError,
    JudgeSpec,
    JudgeVerdict,
    applies,
    build_prompt,
    fold_samples,
    is_judged,
    judge_input,
    judge_spec,
    parse_reply,
    prompt_identity,
    sample_details,
)
from evalward.model import AgentOutput, CaseError, CaseResult, EvalCase, Invocation, MetricResult, MetricSpec

EXPLANATION_REASONING_CHARS = 600
"""How much of the judge's reasoning an explanation quotes (all of it is in `details`)."""


@dataclass(frozen=True)
class ResolvedJudge:
    """A judged criterion bound to its model and endpoint."""

    spec: JudgeSpec
    model: str
    base_url: str | None
    api_key_env: str
    prompt: str
    """sha256 of the prompt templates and settings (`metrics.judge.prompt_identity`)."""
    source: MetricSpec | None = None
    """The criterion as configured."""

    def identity(self) -> dict[str, Any]:
        """What the run's fingerprint and the comparability key record about this judge (no secrets)."""
        return {"metric": self.spec.metric, "model": self.model, "prompt": self.prompt[:16]}


@dataclass
class _Outcome:
    verdicts: list[JudgeVerdict]
    cached: int


class Judging:
    """The judges of one run (module docstring)."""

    def __init__(
        self,
        config: JudgeConfig,
        *,
        cache: JudgeCache | None = None,
        sleep: Sleep = asyncio.sleep,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.cache = cache
        self.usage = JudgeUsage()
        self._sleep = sleep
        self._environ = environ if environ is not None else os.environ
        self._clients: dict[tuple[str | None, str], JudgeClient] = {}
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
        """Resolve every judged spec; InfrastructureError naming the metrics that have no model."""
        missing = sorted({s.name for s in specs if is_judged(s.name) and self.resolve(s) is None})
        if missing:
            raise InfrastructureError(
                f"criteria {', '.join(missing)} need a judge model, and no judge is configured; pass --judge-model "
                "(EVALWARD_JUDGE_MODEL) with --judge-base-url (or OPENAI_BASE_URL) pointing at an OpenAI-compatible "
                "endpoint, set judge_model_options.judge_model in the criteria, or remove them"
            )
        resolved = [self.resolve(s) for s in specs if is_judged(s.name)]
        return [r for r in resolved if r is not None]

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
                backoff_s=self.config.backoff_s,
                prices=self.config.prices,
                usage=self.usage,
                sleep=self._sleep,
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

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
        if self.cache is not None:
            self.cache.close()

    # --- per case ---------------------------------------------------------------------------------------------

    async def _sample(
        self, judge: ResolvedJudge, messages: list[dict[str, str]], index: int, schema: Any
    ) -> tuple[JudgeVerdict, bool]:
        """One sample: from the cache when there, else asked (and stored when it parses)."""
        name, body = schema
        parameters = {**judge.spec.parameters(), "response_format": {"name": name, "schema": body}, "sample": index}
        key = cache_key(judge.model, messages, parameters)
        if self.cache is not None and self.config.cache:
            cached = await self.cache.get(key)
            if cached is not None:
                try:
                    verdict = parse_reply(judge.spec, cached.text)
                except JudgeReplyError:
                    pass  # a stored reply this evalward reads differently: ask again
                else:
                    self.usage.cached += 1
                    return verdict, True
        client = self.client(judge.base_url, judge.api_key_env)
        completion = await client.complete(
            model=judge.model, messages=messages, schema_name=name, schema=body, parameters=judge.spec.parameters()
        )
        verdict = parse_reply(judge.spec, completion.text)
        if self.cache is not None:
            await self.cache.put(
                key, judge.model, CachedReply(completion.text, completion.input_tokens, completion.output_tokens)
            )
        return verdict, False

    async def judge_turn(
        self, judge: ResolvedJudge, expected: Invocation, actual: AgentOutput, threshold: float | None = None
    ) -> MetricResult | None:
        """The metric's result on one turn; None when it does not apply. Judge failures are `error` results."""
        from evalward.metrics.scoring import metric_status

        spec = judge.spec
        item = judge_input(expected, actual)
        if not applies(spec, item):
            return None
        prompt = build_prompt(spec, item)
        messages = [dict(m) for m in prompt.messages]
        schema = (prompt.schema_name, prompt.schema)
        tasks = [self._sample(judge, messages, i, schema) for i in range(spec.num_samples)]
        results = await asyncio.gather(*tasks, return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            first = failures[0]
            if not isinstance(first, JudgeCallError | JudgeReplyError):
                raise first
            kind = "answered something unreadable" if isinstance(first, JudgeReplyError) else "failed"
            return MetricResult(
                name=spec.metric,
                score=None,
                status="error",
                explanation=f"judge {judge.model!r} {kind}: {first}",
                details={"judge": judge.identity(), "judge_error": str(first)},
            )
        verdicts = [r[0] for r in results if not isinstance(r, BaseException)]
        cached = sum(1 for r in results if not isinstance(r, BaseException) and r[1])
        folded = fold_samples(spec, verdicts)
        reasoning = folded.reasoning
        if len(reasoning) > EXPLANATION_REASONING_CHARS:
            reasoning = reasoning[: EXPLANATION_REASONING_CHARS - 1] + "…"
        explanation = f"{folded.explanation}; reasoning: {reasoning}" if reasoning else folded.explanation
        status = metric_status(folded.value, threshold, True)
        return MetricResult(
            name=spec.metric,
            score=folded.value,
            threshold=threshold,
            status=status,
            explanation=_with_verdict(explanation, folded.value, threshold),
            details={
                "judge": judge.identity(),
                "reasoning": folded.reasoning,
                "samples": sample_details(verdicts),
                "cached_samples": cached,
            },
        )

    async def score_case(
        self, case: EvalCase, specs: Sequence[MetricSpec], outputs: Sequence[AgentOutput]
    ) -> tuple[list[MetricResult], dict[int, list[MetricResult]], CaseError | None]:
        """Judged case-level results, per-turn results and the judge error (if any) of one case."""
        judged = [s for s in specs if is_judged(s.name)]
        turn_results: dict[int, list[MetricResult]] = {}
        case_results: list[MetricResult] = []
        error: CaseError | None = None
        n_turns = min(len(outputs), len(case.turns))
        for metric_spec in judged:
            judge = self.resolve(metric_spec)
            if judge is None:  # resolve_all refused this before the run; kept for direct callers
                raise InfrastructureError(f"{metric_spec.name} needs a judge model, and no judge is configured")
            per_turn = await asyncio.gather(
                *(self.judge_turn(judge, case.turns[t], outputs[t], metric_spec.threshold) for t in range(n_turns))
            )
            for turn, result in enumerate(per_turn):
                if result is not None:
                    turn_results.setdefault(turn, []).append(result)
            case_result = _case_result(metric_spec, judge, list(per_turn))
            case_results.append(case_result)
            if case_result.status == "error" and error is None:
                errored_turn = next((t for t, r in enumerate(per_turn) if r is not None and r.status == "error"), None)
                error = CaseError(
                    kind="judge_error", message=f"{metric_spec.name}: {case_result.explanation}", turn=errored_turn
                )
        return case_results, turn_results, error


async def apply_judges(
    result: CaseResult,
    case: EvalCase,
    specs: Sequence[MetricSpec],
    outputs: Sequence[AgentOutput],
    judging: Judging,
) -> CaseResult:
    """`result` with every judged metric of `specs` scored on `outputs` and its status recomputed."""
    if not outputs or not any(is_judged(s.name) for s in specs):
        return result
    case_results, turn_results, error = await judging.score_case(case, specs, outputs)
    return merge_metric_results(result, case_results, turn_results, error)


def _with_verdict(explanation: str, value: float, threshold: float | None) -> str:
    if threshold is None:
        return explanation
    ok = value >= threshold
    return f"{explanation}; {value:.3f} {'>=' if ok else 'not >='} {threshold:g}"


def _case_result(spec: MetricSpec, judge: ResolvedJudge, per_turn: list[MetricResult | None]) -> MetricResult:
    from evalward.metrics.scoring import metric_status

    errored = [r for r in per_turn if r is not None and r.status == "error"]
    if errored:
        return errored[0].model_copy(update={"threshold": spec.threshold})
    scored = [(t, r) for t, r in enumerate(per_turn) if r is not None and r.score is not None]
    if not scored:
        return MetricResult(
            name=spec.name,
            score=None,
            threshold=spec.threshold,
            status="not_applicable",
            explanation="not applicable: no turn carries what the judge needs (e.g. a reference response)",
            details={"judge": judge.identity()},
        )
    if len(per_turn) == 1:
        return scored[0][1]
    values = [r.score for _, r in scored if r.score is not None]
    mean = sum(values) / len(values)
    terms = " + ".join(f"{v:.3f}" for v in values)
    explanation = f"mean over {len(values)} judged turn(s) of {len(per_turn)}: ({terms})/{len(values)} = {mean:.3f}"
    return MetricResult(
        name=spec.name,
        score=mean,
        threshold=spec.threshold,
        status=metric_status(mean, spec.threshold, True),
        explanation=_with_verdict(explanation, mean, spec.threshold),
        details={"judge": judge.identity(), "turn_scores": {str(t): r.score for t, r in scored}},
    )


def judged_specs(specs_per_case: Sequence[Sequence[MetricSpec]]) -> list[MetricSpec]:
    """The distinct judged specs among all cases' specs (by canonical content), in first-seen order."""
    seen: dict[str, MetricSpec] = {}
    for specs in specs_per_case:
        for spec in specs:
            if is_judged(spec.name):
                seen.setdefault(spec.model_dump_json(), spec)
    return list(seen.values())
