"""LangSmith, openevals and agentevals evaluators, written as their READMEs show, score the same cases under
`evalward run` as they do called directly (openevals, agentevals) or under `langsmith.evaluate(...,
upload_results=False)` (#30 rows 7, 8, 9): text evaluators get the answer text for a text reference, agentevals
gets OpenAI-format trajectories, and `run` / `example` are LangSmith's own objects."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import Reply
from tests.peers.conftest import evalward, grading_reply, results_by_case, serve_judge, verdict

pytest.importorskip("openevals")
pytest.importorskip("agentevals")
pytest.importorskip("langsmith")

JUDGE_PROMPT = "Is the answer right?\nANSWER: {outputs}\nREFERENCE: {reference_outputs}"

# Written to the project as a user writes their evaluators module.
USER_EVALUATORS = f"""
from agentevals.trajectory.match import create_trajectory_match_evaluator
from langsmith.evaluation import EvaluationResult, run_evaluator
from openevals.llm import create_llm_as_judge

correctness = create_llm_as_judge(prompt={JUDGE_PROMPT!r}, model="openai:judge-1", feedback_key="correctness")

strict = create_trajectory_match_evaluator(trajectory_match_mode="strict")
unordered = create_trajectory_match_evaluator(trajectory_match_mode="unordered")
subset = create_trajectory_match_evaluator(trajectory_match_mode="subset")
superset = create_trajectory_match_evaluator(trajectory_match_mode="superset")
strict_ignoring_args = create_trajectory_match_evaluator(trajectory_match_mode="strict", tool_args_match_mode="ignore")


def correct(run, example):
    return {{"key": "correct", "score": run.outputs["answer"] == example.outputs["answer"]}}


def hard_and_right(run, example):
    return {{"key": "hard_and_right", "score": example.metadata["difficulty"] == "hard" and run.outputs == example.outputs}}


def same_answer(inputs, outputs, reference_outputs):
    return outputs["answer"] == reference_outputs["answer"]


@run_evaluator
def traced(run, example):
    known = run.id is not None and run.reference_example_id == example.id and example.dataset_id is not None
    return EvaluationResult(key="traced", score=known and run.start_time <= run.end_time)
"""


def judge(request: dict[str, Any]) -> Reply:
    """Passes when the answer equals the reference in the prompt (JUDGE_PROMPT)."""
    prompt = "\n".join(m["content"] for m in request["messages"] if isinstance(m.get("content"), str))
    answer = re.search(r"ANSWER: (.*)", prompt)
    reference = re.search(r"REFERENCE: (.*)", prompt)
    right = bool(answer and reference and answer.group(1).strip() == reference.group(1).strip())
    grading = {"reasoning": "compared the answer with the reference", "score": right}
    return grading_reply(request, grading)


@pytest.fixture
def judge_server(monkeypatch: pytest.MonkeyPatch) -> Any:
    yield from serve_judge(monkeypatch, judge)


def write(project: Path, cases: list[dict[str, Any]], evaluators: dict[str, str]) -> None:
    lines = ["evalward: 1", "cases:", *("  - " + json.dumps(case) for case in cases)]
    (project / "cases.eval.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (project / "user_evaluators.py").write_text(USER_EVALUATORS, encoding="utf-8")
    config = {
        "criteria": dict.fromkeys(evaluators),
        "custom_metrics": {name: {"code_config": {"name": path}} for name, path in evaluators.items()},
        "replace_defaults": True,
    }
    (project / "test_config.json").write_text(json.dumps(config), encoding="utf-8")


def run_verdicts(path: str) -> dict[str, dict[str, Any]]:
    """case id → criterion → evalward's verdict (one result per criterion)."""
    _, _, run = evalward("run", path, "--agent", "tests.fakes.agents:echo", "--no-history")
    assert run, "no run report"
    return {case: {name: verdict(r) for name, r in results.items()} for case, results in results_by_case(run).items()}


# --- row 7: openevals text evaluators -------------------------------------------------------------------------

TEXT_CASES: list[dict[str, Any]] = [
    {"id": "paris", "inputs": {"question": "Capital of France?", "response": "Paris"}, "expect": {"response": "Paris"}},
    {"id": "rome", "inputs": {"question": "Capital of Italy?", "response": "Rom"}, "expect": {"response": "Rome"}},
    {
        "id": "madrid",
        "inputs": {"question": "Capital of Spain?", "output": {"response": "Madrid", "confidence": 0.9}},
        "expect": {"response": "Madrid"},
    },
    {
        "id": "berlin",
        "inputs": {"question": "Capital of Germany?", "response": "The capital is Berlin"},
        "expect": {"response": "Berlin"},
    },
]


def answer_of(case: dict[str, Any]) -> str:
    scripted = case["inputs"].get("output")
    return str(scripted["response"] if scripted else case["inputs"]["response"])


def test_openevals_text_evaluators_get_the_answer_text(project: Path, judge_server: Any) -> None:
    from openevals.exact import exact_match
    from openevals.llm import create_llm_as_judge
    from openevals.string.levenshtein import levenshtein_distance

    write(
        project,
        TEXT_CASES,
        {
            "exact": "openevals.exact:exact_match",
            "levenshtein": "openevals.string.levenshtein:levenshtein_distance",
            "correctness": "user_evaluators:correctness",
        },
    )
    ours = run_verdicts("cases.eval.yaml")
    correctness = create_llm_as_judge(prompt=JUDGE_PROMPT, model="openai:judge-1", feedback_key="correctness")
    for case in TEXT_CASES:
        answer, reference = answer_of(case), case["expect"]["response"]
        theirs = {
            "exact": exact_match(outputs=answer, reference_outputs=reference)["score"],
            "levenshtein": levenshtein_distance(outputs=answer, reference_outputs=reference)["score"],
            "correctness": correctness(outputs=answer, reference_outputs=reference)["score"],
        }
        assert ours[case["id"]] == theirs, case["id"]
    assert [ours[c["id"]]["exact"] for c in TEXT_CASES] == [True, False, True, False]
    assert 0 < ours["rome"]["levenshtein"] < 1


# --- row 8: agentevals trajectory match ------------------------------------------------------------------------

WEATHER = {"name": "get_weather", "args": {"city": "Paris"}}
TIME = {"name": "get_time", "args": {"zone": "CET"}}
OTHER_CITY = {"name": "get_weather", "args": {"city": "Lyon"}}
TRAJECTORIES: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]]]] = [
    ("same", [WEATHER, TIME], [WEATHER, TIME]),
    ("reordered", [TIME, WEATHER], [WEATHER, TIME]),
    ("extra_call", [WEATHER, TIME], [WEATHER]),
    ("missing_call", [WEATHER], [WEATHER, TIME]),
    ("other_arguments", [OTHER_CITY], [WEATHER]),
    ("no_calls", [], [WEATHER]),
]
MODES = ["strict", "unordered", "subset", "superset", "strict_ignoring_args"]


def openai_messages(question: str, calls: list[dict[str, Any]], answer: str) -> list[dict[str, Any]]:
    """A recorded trajectory as an agentevals user writes it: one assistant message per tool call."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    for index, call in enumerate(calls):
        call_id = f"call_{index}"
        function = {"name": call["name"], "arguments": json.dumps(call["args"])}
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": f"result of {call['name']}"})
    messages.append({"role": "assistant", "content": answer})
    return messages


def test_agentevals_trajectory_match_agrees_in_every_mode(project: Path) -> None:
    from agentevals.trajectory.match import create_trajectory_match_evaluator

    cases = [
        {
            "id": name,
            "inputs": {"question": f"Weather and time? ({name})", "response": "Sunny, 10:00", "tool_calls": calls},
            "expect": {"tool_calls": expected, "response": "Sunny, 10:00"},
        }
        for name, calls, expected in TRAJECTORIES
    ]
    write(project, cases, {mode: f"user_evaluators:{mode}" for mode in MODES})
    ours = run_verdicts("cases.eval.yaml")
    evaluators = {
        mode: create_trajectory_match_evaluator(
            trajectory_match_mode=mode.removesuffix("_ignoring_args"),  # type: ignore[arg-type]
            tool_args_match_mode="ignore" if mode.endswith("_ignoring_args") else "exact",
        )
        for mode in MODES
    }
    for case, (name, calls, expected) in zip(cases, TRAJECTORIES, strict=True):
        question = case["inputs"]["question"]
        outputs = openai_messages(question, calls, "Sunny, 10:00")
        reference = openai_messages(question, expected, "Sunny, 10:00")
        theirs = {mode: e(outputs=outputs, reference_outputs=reference)["score"] for mode, e in evaluators.items()}
        assert ours[name] == theirs, name
    assert ours["reordered"]["strict"] is False and ours["reordered"]["unordered"] is True
    assert ours["extra_call"]["superset"] is True and ours["extra_call"]["subset"] is False
    assert ours["other_arguments"]["strict"] is False and ours["other_arguments"]["strict_ignoring_args"] is True


# --- row 9: LangSmith run / example objects ----------------------------------------------------------------------

EXAMPLES: list[dict[str, Any]] = [
    {
        "id": str(uuid.UUID(int=1)),
        "question": "Capital of France?",
        "answer": "Paris",
        "given": "Paris",
        "difficulty": "easy",
    },
    {
        "id": str(uuid.UUID(int=2)),
        "question": "Capital of Australia?",
        "answer": "Canberra",
        "given": "Canberra",
        "difficulty": "hard",
    },
    {
        "id": str(uuid.UUID(int=3)),
        "question": "Capital of Canada?",
        "answer": "Ottawa",
        "given": "Toronto",
        "difficulty": "hard",
    },
]


# langsmith.evaluate(upload_results=False) announces its own beta parameter.
@pytest.mark.filterwarnings("ignore:'upload_runs' parameter is in beta")
def test_langsmith_evaluators_see_run_and_example_as_langsmith_gives_them(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import langsmith
    from langsmith.schemas import Example

    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    dataset = [
        {
            "id": e["id"],
            "inputs": {"question": e["question"], "output": {"answer": e["given"]}},
            "outputs": {"answer": e["answer"]},
            "metadata": {"difficulty": e["difficulty"]},
        }
        for e in EXAMPLES
    ]
    (project / "capitals.json").write_text(json.dumps(dataset), encoding="utf-8")
    (project / "user_evaluators.py").write_text(USER_EVALUATORS, encoding="utf-8")
    names = ["correct", "hard_and_right", "same_answer", "traced"]
    config = {
        "criteria": dict.fromkeys(names),
        "custom_metrics": {name: {"code_config": {"name": f"user_evaluators:{name}"}} for name in names},
        "replace_defaults": True,
    }
    (project / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    ours = run_verdicts("capitals.json")

    import importlib

    module_name = "user_evaluators"  # written to the project above, as a user's own module
    user_evaluators = importlib.import_module(module_name)

    dataset_id = uuid.uuid4()
    examples = [
        Example(
            id=uuid.UUID(d["id"]),
            inputs=d["inputs"],
            outputs=d["outputs"],
            metadata=d["metadata"],
            dataset_id=dataset_id,
        )
        for d in dataset
    ]
    results = langsmith.evaluate(
        lambda inputs: dict(inputs["output"]),
        data=examples,
        evaluators=[getattr(user_evaluators, name) for name in names],
        upload_results=False,
    )
    theirs: dict[str, dict[str, Any]] = {}
    for row in results:
        scores = {r.key: r.score for r in row["evaluation_results"]["results"]}
        theirs[str(row["example"].id)] = {name: scores[name] for name in ["correct", "hard_and_right", "traced"]}
        theirs[str(row["example"].id)]["same_answer"] = scores["same_answer"]
    assert ours == theirs
    assert [ours[e["id"]]["hard_and_right"] for e in EXAMPLES] == [False, True, False]
    assert all(ours[e["id"]]["traced"] is True for e in EXAMPLES)
