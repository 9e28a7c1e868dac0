"""Differential tests: the ADK-named metrics against google-adk 2.13.0's own evaluators.

The same cases are built twice, as evalward models and as ADK `Invocation`s, and scored by
`ToolTrajectoryAvgScore` / `ResponseMatchScore` and by ADK's `TrajectoryEvaluator` / `RougeEvaluator`
(`evaluate_invocations`). Per-invocation scores must be equal (`==`, the floats are bit-identical) and
case scores (the mean over invocations) equal within 1e-12.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from evalward.metrics.adk import MATCH_TYPES, MatchType, ResponseMatchScore, ToolTrajectoryAvgScore
from evalward.metrics.base import TurnContext
from evalward.model import AgentOutput, EvalCase, Invocation, MetricSpec, ToolCall

pytestmark = pytest.mark.adk

# Imported once for the module: ADK's evaluation stack takes seconds to import.
adk_case = pytest.importorskip("google.adk.evaluation.eval_case")
adk_metrics = pytest.importorskip("google.adk.evaluation.eval_metrics")
adk_trajectory = pytest.importorskip("google.adk.evaluation.trajectory_evaluator")
adk_rouge = pytest.importorskip("google.adk.evaluation.final_response_match_v1")
genai_types = pytest.importorskip("google.genai.types")

Call = tuple[str, dict[str, Any] | None]
"""A tool call as (name, args); args None = absent."""


# ---------------------------------------------------------------------------------------------- builders


def _adk_invocation(response: str | None, calls: list[Call]) -> Any:
    return adk_case.Invocation(
        user_content=genai_types.Content(role="user", parts=[genai_types.Part(text="question")]),
        final_response=None
        if response is None
        else genai_types.Content(role="model", parts=[genai_types.Part(text=response)]),
        intermediate_data=adk_case.IntermediateData(
            tool_uses=[genai_types.FunctionCall(name=name, args=args) for name, args in calls]
        ),
    )


def _ours_turns(
    pairs: list[tuple[list[Call], list[Call]]] | None = None,
    texts: list[tuple[str | None, str | None]] | None = None,
) -> tuple[EvalCase, list[tuple[Invocation, AgentOutput]]]:
    """(case, [(expected, actual)]) from (actual calls, expected calls) pairs or (response, reference) pairs."""
    turns: list[tuple[Invocation, AgentOutput]] = []
    for actual_calls, expected_calls in pairs or []:
        turns.append(
            (
                Invocation(query="question", expected_tool_calls=[ToolCall(name=n, args=a) for n, a in expected_calls]),
                AgentOutput(tool_calls=[ToolCall(name=n, args=a) for n, a in actual_calls]),
            )
        )
    for response, reference in texts or []:
        turns.append((Invocation(query="question", expected_response=reference), AgentOutput(response=response)))
    case = EvalCase(case_id="case", turns=[expected for expected, _ in turns])
    return case, turns


def _score_ours(
    metric: Any, spec: MetricSpec, case: EvalCase, turns: list[tuple[Invocation, AgentOutput]]
) -> list[float]:
    scores: list[float] = []
    for index, (expected, actual) in enumerate(turns):
        score = metric.score_turn(TurnContext(case=case, turn=index, expected=expected, actual=actual, spec=spec))
        assert score is not None
        scores.append(score.value)
    return scores


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def compare_trajectory(
    pairs: list[tuple[list[Call], list[Call]]], match_type: MatchType, ignore_args: bool
) -> list[float]:
    """Score `pairs` (actual, expected) with both implementations; assert equal; return ADK's scores."""
    criterion = adk_metrics.ToolTrajectoryCriterion(threshold=1.0, match_type=match_type, ignore_args=ignore_args)
    evaluator = adk_trajectory.TrajectoryEvaluator(
        eval_metric=adk_metrics.EvalMetric(metric_name="tool_trajectory_avg_score", criterion=criterion)
    )
    result = evaluator.evaluate_invocations(
        [_adk_invocation(None, actual) for actual, _ in pairs],
        [_adk_invocation(None, expected) for _, expected in pairs],
    )
    theirs = [r.score for r in result.per_invocation_results]

    spec = MetricSpec(
        name="tool_trajectory_avg_score", threshold=1.0, options={"match_type": match_type, "ignore_args": ignore_args}
    )
    case, turns = _ours_turns(pairs=pairs)
    ours = _score_ours(ToolTrajectoryAvgScore(), spec, case, turns)

    for index, (mine, adk) in enumerate(zip(ours, theirs, strict=True)):
        assert mine == adk, f"{match_type} ignore_args={ignore_args} invocation {index}: {pairs[index]}"
    assert abs(_mean(ours) - result.overall_score) < 1e-12
    return list(theirs)


def compare_rouge(texts: list[tuple[str | None, str | None]]) -> list[float]:
    """Score (response, reference) pairs with both implementations; assert equal; return ADK's scores."""
    evaluator = adk_rouge.RougeEvaluator(adk_metrics.EvalMetric(metric_name="response_match_score", threshold=0.5))
    result = evaluator.evaluate_invocations(
        [_adk_invocation(response, []) for response, _ in texts],
        [_adk_invocation(reference, []) for _, reference in texts],
    )
    theirs = [r.score for r in result.per_invocation_results]

    case, turns = _ours_turns(texts=texts)
    ours = _score_ours(ResponseMatchScore(), MetricSpec(name="response_match_score", threshold=0.5), case, turns)

    for index, (mine, adk) in enumerate(zip(ours, theirs, strict=True)):
        assert mine == adk, f"invocation {index}: response={texts[index][0]!r} reference={texts[index][1]!r}"
    assert abs(_mean(ours) - result.overall_score) < 1e-12
    return list(theirs)


# ------------------------------------------------------------------------------------------- trajectory

A: Call = ("a", {"x": 1})
B: Call = ("b", {"y": "z"})
C: Call = ("c", None)

# (actual, expected) pairs chosen for the edge cases named in docs/formats.md §6.1.
CRAFTED_PAIRS: list[tuple[list[Call], list[Call]]] = [
    ([], []),
    ([A], []),
    ([], [A]),
    ([A, B], [A, B]),
    ([B, A], [A, B]),
    ([A, C, B], [A, B]),
    ([A], [A, A]),  # duplicates count
    ([A, A], [A]),
    ([A, A, B], [A, B, A]),
    ([("a", {"x": 1.0})], [("a", {"x": 1})]),  # 1 == 1.0
    ([("a", {"x": True})], [("a", {"x": 1})]),  # True == 1
    ([("a", {"x": False})], [("a", {"x": 0})]),  # False == 0
    ([("a", {"x": "1"})], [("a", {"x": 1})]),  # "1" != 1
    ([("a", {"n": {"p": 1, "q": [1, 2]}})], [("a", {"n": {"q": [1, 2], "p": 1}})]),  # key order ignored
    ([("a", {"l": [2, 1]})], [("a", {"l": [1, 2]})]),  # list order matters
    ([("a", None)], [("a", {})]),  # absent args != {}
    ([("a", {})], [("a", None)]),
    ([("a", None)], [("a", None)]),
    ([("A", {"x": 1})], [("a", {"x": 1})]),  # names are case-sensitive
    ([("a", {"x": 2}), ("a", {"x": 1})], [("a", {"x": 1})]),
    ([("a", {"x": 2}), ("b", {}), ("a", {"x": 1})], [("a", {"x": 1}), ("b", {})]),
    ([("t1", None), ("x", None), ("t2", None), ("y", None), ("t3", None)], [("t1", None), ("t2", None), ("t3", None)]),
    ([("t2", None), ("t1", None), ("t3", None)], [("t1", None), ("t2", None), ("t3", None)]),
    ([("a", {"x": None})], [("a", {"x": None})]),
    ([("a", {"x": None})], [("a", {})]),
]


@pytest.mark.parametrize("ignore_args", [False, True])
@pytest.mark.parametrize("match_type", MATCH_TYPES)
def test_trajectory_crafted_cases_match_adk(match_type: MatchType, ignore_args: bool) -> None:
    theirs = compare_trajectory(CRAFTED_PAIRS, match_type, ignore_args)
    # The cases are not trivially all-equal: each mode passes some and fails some.
    assert 0.0 in theirs and 1.0 in theirs


def test_trajectory_spot_values_match_the_reference_doc() -> None:
    # hand calculation (docs/formats.md §6.1): expected [T1,T2,T3]; actual [T1,X,T2,Y,T3] -> IN_ORDER 1,
    # ANY_ORDER 1, EXACT 0; actual [T2,T1,T3] -> IN_ORDER 0, ANY_ORDER 1.
    t1, t2, t3, x, y = (("t1", None), ("t2", None), ("t3", None), ("x", None), ("y", None))
    interleaved = ([t1, x, t2, y, t3], [t1, t2, t3])
    swapped = ([t2, t1, t3], [t1, t2, t3])
    assert compare_trajectory([interleaved, swapped], "IN_ORDER", False) == [1.0, 0.0]
    assert compare_trajectory([interleaved, swapped], "ANY_ORDER", False) == [1.0, 1.0]
    assert compare_trajectory([interleaved, swapped], "EXACT", False) == [0.0, 0.0]
    # hand calculation: 2 turns, one mismatch -> case mean (1 + 0) / 2 = 0.5
    assert _mean(compare_trajectory([([A], [A]), ([B], [A])], "EXACT", False)) == 0.5


# Argument values that are equal or unequal under Python ==, mixed at random.
_ARG_VALUES: list[Any] = [1, 1.0, True, "1", 0, False, None, [1, 2], [2, 1], {"p": 1, "q": 2}, {"q": 2, "p": 1}, "x"]


def _random_call(rng: random.Random) -> Call:
    name = rng.choice(["a", "b", "c"])
    shape = rng.random()
    if shape < 0.15:
        return (name, None)
    if shape < 0.25:
        return (name, {})
    keys = rng.sample(["k", "m"], rng.randint(1, 2))
    return (name, {key: rng.choice(_ARG_VALUES) for key in keys})


def _random_pairs(seed: int, count: int) -> list[tuple[list[Call], list[Call]]]:
    rng = random.Random(seed)
    pairs: list[tuple[list[Call], list[Call]]] = []
    for _ in range(count):
        expected = [_random_call(rng) for _ in range(rng.randint(0, 3))]
        # Often start from the expected calls, then shuffle, drop or insert, so matches are common.
        actual = list(expected) if rng.random() < 0.6 else [_random_call(rng) for _ in range(rng.randint(0, 4))]
        if rng.random() < 0.3:
            rng.shuffle(actual)
        if actual and rng.random() < 0.2:
            actual.pop(rng.randrange(len(actual)))
        if rng.random() < 0.3:
            actual.insert(rng.randint(0, len(actual)), _random_call(rng))
        pairs.append((actual, expected))
    return pairs


@pytest.mark.parametrize("ignore_args", [False, True])
@pytest.mark.parametrize("match_type", MATCH_TYPES)
def test_trajectory_random_cases_match_adk(match_type: MatchType, ignore_args: bool) -> None:
    theirs = compare_trajectory(_random_pairs(seed=20260513, count=400), match_type, ignore_args)
    assert 0.0 in theirs and 1.0 in theirs


def test_adk_match_type_spellings_score_alike() -> None:
    # ADK normalises "in order", "in-order", " In_Order " and the enum value 1 to IN_ORDER.
    pairs = [([A, C, B], [A, B]), ([B, A], [A, B])]
    case, turns = _ours_turns(pairs=pairs)
    for spelling in ["in order", "in-order", " In_Order ", 1]:
        spec = MetricSpec(name="tool_trajectory_avg_score", options={"match_type": spelling})
        assert _score_ours(ToolTrajectoryAvgScore(), spec, case, turns) == compare_trajectory(pairs, "IN_ORDER", False)


# ----------------------------------------------------------------------------------------------- ROUGE

# (response, reference) pairs with the Unicode behaviour named in docs/formats.md §6.2.
UNICODE_TEXTS: list[tuple[str | None, str | None]] = [
    ("naïve approach", "naive approach"),
    ("你好世界", "你好"),
    ("ﬁle", "file"),
    ("１２３", "123"),
    ("Привет, как дела?", "привет как дела"),
    ("สวัสดีครับ", "สวัสดีค่ะ"),  # Thai with combining vowel and tone marks
    ("ありがとうございます", "ありがとう"),  # Hiragana
    ("コーヒーをください", "コーヒー"),  # Katakana with the prolonged sound mark
    ("안녕하세요 세계", "안녕 세계"),  # Hangul
    ("device_2", "device 2"),
    ("running dogs", "run dog"),
    ("", ""),
    (None, None),
    ("", "some text"),
    ("some text", ""),
    ("Café CAFÉ café", "cafe"),
    ("İstanbul", "istanbul"),  # lower-casing İ adds a combining dot
    ("e\u0301te", "été"),  # combining acute vs precomposed (NFKC composes)
    ("ລາວ ພາສາ", "ລາວ"),  # Lao
    ("ភាសាខ្មែរ", "ខ្មែរ"),  # Khmer
    ("မြန်မာ", "မြန်"),  # Myanmar
    ("नमस्ते दुनिया", "नमस्ते"),  # Devanagari: matras attach as word characters
    ("مرحبا بالعالم", "مرحبا"),  # Arabic
    ("x² + y² = z²", "x2 y2 z2"),  # superscripts become digits under NFKC
    ("Ⅻ chapters", "xii chapters"),  # roman numeral compatibility character
    ("emoji 🙂 test", "emoji test"),
    ("中文English混合 text", "中文 english text"),
    ("  \n\t ", "!!!"),
    ("The U.S.A. is big.", "the usa is big"),
    ("straße", "strasse"),
    ("ΑΘΗΝΑ Αθήνα", "αθηνα"),
]


def test_rouge_unicode_cases_match_adk() -> None:
    compare_rouge(UNICODE_TEXTS)


def test_rouge_worked_examples_of_the_reference_doc() -> None:
    # hand calculations (docs/formats.md §6.2):
    #   naïve approach / naive approach: tokens {naïve, approach} vs {naiv, approach}: overlap 1, P = R = 1/2 -> 0.5
    #   你好世界 / 你好: overlap 2, P = 2/4, R = 2/2, F = 2·0.5·1/1.5 = 0.667
    #   ﬁle / file and １２３ / 123: NFKC makes them equal -> 1.0; running dogs / run dog: stems equal -> 1.0
    #   empty vs empty -> 0.0 (ADK's rule)
    scores = compare_rouge(
        [
            ("naïve approach", "naive approach"),
            ("你好世界", "你好"),
            ("ﬁle", "file"),
            ("１２３", "123"),
            ("running dogs", "run dog"),
            ("", ""),
        ]
    )
    assert scores[0] == 0.5
    assert abs(scores[1] - 2 / 3) < 1e-12
    assert scores[2:] == [1.0, 1.0, 1.0, 0.0]


_WORDS = [
    "the", "a", "an", "of", "to", "run", "running", "runs", "ran", "dog", "dogs", "happily", "happy",
    "happiness", "connect", "connected", "connection", "connections", "generalization", "generous", "agent",
    "agents", "tool", "tools", "called", "calling", "42", "3", "1999", "weather", "weathered", "is", "was",
    "be", "being", "city", "cities", "flight", "flights", "book", "booked", "booking", "policy", "policies",
    "caresses", "ponies",
]  # fmt: skip
_SEPARATORS = [" ", " ", " ", ", ", ". ", "-", "_", "'", "  ", "\n", "/", "!"]


def _random_sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(0, 12))]
    words = [w.upper() if rng.random() < 0.1 else w.capitalize() if rng.random() < 0.1 else w for w in words]
    return "".join(word + rng.choice(_SEPARATORS) for word in words).strip() if words else ""


def test_rouge_random_ascii_sentences_match_adk() -> None:
    rng = random.Random(613)
    texts: list[tuple[str | None, str | None]] = []
    for _ in range(300):
        reference = _random_sentence(rng)
        response = reference if rng.random() < 0.1 else _random_sentence(rng)
        texts.append((response, reference))
    scores = compare_rouge(texts)
    assert len(set(scores)) > 20


_UNICODE_PIECES = [
    "naïve", "café", "Ärger", "straße", "привет", "мир", "你", "好", "世界", "ありがとう", "コーヒー", "안녕",
    "สวัสดี", "ครับ", "ﬁle", "１２３", "ＡＢＣ", "x²", "Ⅻ", "🙂", "नमस्ते", "مرحبا", "e\u0301", "device_2",
    "running", "dogs", "the", "agent", "İ", "ΑΘΗΝΑ", "ǅ", "ﬀ", "⑤", "½",
]  # fmt: skip


def test_rouge_random_unicode_sentences_match_adk() -> None:
    rng = random.Random(2026)
    texts: list[tuple[str | None, str | None]] = []
    for _ in range(200):
        reference = rng.choice(["", " ", "-"]).join(rng.choice(_UNICODE_PIECES) for _ in range(rng.randint(0, 6)))
        response = rng.choice(["", " ", ", "]).join(rng.choice(_UNICODE_PIECES) for _ in range(rng.randint(0, 6)))
        texts.append((response, reference))
    compare_rouge(texts)


# ------------------------------------------------------------------------ case level, through scoring


def test_case_scores_and_statuses_through_score_case_match_adk() -> None:
    """A 3-turn case scored by `scoring.score_case` gives ADK's overall scores and PASSED/FAILED."""
    from evalward.metrics.scoring import score_case

    turns_spec: list[tuple[list[Call], list[Call], str, str | None]] = [
        # (actual calls, expected calls, response, reference); the last reference is missing, as in
        # roll_die.test.json, so ADK scores that turn's ROUGE as empty vs text.
        ([A, B], [A, B], "The dice rolled a 6.", "You rolled a 6."),
        ([B, A], [A, B], "Checking prime numbers now", "2 and 3 are prime"),
        ([("c", {"x": 1.0})], [("c", {"x": 1})], "Done.", None),
    ]
    case = EvalCase(
        case_id="roll",
        turns=[
            Invocation(
                query="q", expected_response=reference, expected_tool_calls=[ToolCall(name=n, args=a) for n, a in exp]
            )
            for _, exp, _, reference in turns_spec
        ],
    )
    outputs = [
        AgentOutput(response=response, tool_calls=[ToolCall(name=n, args=a) for n, a in act])
        for act, _, response, _ in turns_spec
    ]
    # Thresholds at ADK's example config (trajectory 0.6, ROUGE 0.3) and at the exact case score.
    for trajectory_threshold, rouge_threshold in [(0.6, 0.3), (2 / 3, 0.1), (1.0, 0.5)]:
        specs = [
            MetricSpec(name="tool_trajectory_avg_score", threshold=trajectory_threshold),
            MetricSpec(name="response_match_score", threshold=rouge_threshold),
        ]
        ours = {r.name: r for r in score_case(case, specs, outputs).metric_results}

        criterion = adk_metrics.ToolTrajectoryCriterion(threshold=trajectory_threshold)
        adk_t = adk_trajectory.TrajectoryEvaluator(
            eval_metric=adk_metrics.EvalMetric(metric_name="tool_trajectory_avg_score", criterion=criterion)
        ).evaluate_invocations(
            [_adk_invocation(response, act) for act, _, response, _ in turns_spec],
            [_adk_invocation(reference, exp) for _, exp, _, reference in turns_spec],
        )
        adk_r = adk_rouge.RougeEvaluator(
            adk_metrics.EvalMetric(metric_name="response_match_score", threshold=rouge_threshold)
        ).evaluate_invocations(
            [_adk_invocation(response, act) for act, _, response, _ in turns_spec],
            [_adk_invocation(reference, exp) for _, exp, _, reference in turns_spec],
        )
        for name, adk_result in [("tool_trajectory_avg_score", adk_t), ("response_match_score", adk_r)]:
            mine = ours[name]
            assert mine.score is not None
            assert abs(mine.score - adk_result.overall_score) < 1e-12, name
            assert mine.status == adk_result.overall_eval_status.name.lower(), (name, mine.score)
    # hand calculation (EXACT): turns 1 and 3 match (1 == 1.0), turn 2 is swapped -> (1 + 0 + 1) / 3 = 0.667
    assert ours["tool_trajectory_avg_score"].score == 2 / 3
