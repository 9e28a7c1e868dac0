"""The query a native turn written with `inputs` and no `query` gives its agent (issue #30, row 10).

Rule 3 of `loaders.native`: `query` as written; else the LangSmith rule (`langsmith.find_query`: question, query,
input, text, prompt, message, then the last user message); else the only value of a one-key `inputs` when it is a
string; else `inputs` as compact JSON. Before, every such turn sent `"query": ""`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalward.loaders.langsmith import query_from_inputs
from evalward.loaders.native import turn_query

from .conftest import LoadText, ProblemsOf

CASES = """\
evalward: 1
cases:
  - {id: question, inputs: {question: "What is 2+2?", context: arithmetic}}
  - {id: earlier_key_wins, inputs: {prompt: second, text: first}}
  - {id: prompt, inputs: {prompt: Write a haiku, style: terse}}
  - {id: message, inputs: {message: Hi there, user_id: 7}}
  - {id: messages, inputs: {messages: [{role: user, content: one}, {role: assistant, content: two}]}}
  - {id: one_string, inputs: {topic: refunds}}
  - {id: two_values, inputs: {nights: 2, city: Paris}}
  - {id: one_number, inputs: {n: 3}}
  - {id: no_text_in_question, inputs: {question: 42, city: Oslo}}
  - {id: written_query_wins, query: Refund invoice 237, inputs: {question: something else}}
  - {id: written_empty_query_is_kept, query: "", inputs: {question: not asked}}
  - id: turns
    turns:
      - {inputs: {input: first turn}}
      - {inputs: {city: Rome, when: {day: 3}}}
"""


def test_the_query_a_turn_gets_from_its_inputs(load_text: LoadText) -> None:
    eval_set = load_text("q.eval.yaml", CASES)
    queries = {case.case_id: [turn.query for turn in case.turns] for case in eval_set.cases}
    assert queries == {
        "question": ["What is 2+2?"],
        "earlier_key_wins": ["first"],  # `text` comes before `prompt` in the shared key order
        "prompt": ["Write a haiku"],
        "message": ["Hi there"],
        "messages": ["one"],
        "one_string": ["refunds"],
        "two_values": ['{"city": "Paris", "nights": 2}'],
        "one_number": ['{"n": 3}'],
        "no_text_in_question": ['{"city": "Oslo", "question": 42}'],
        "written_query_wins": ["Refund invoice 237"],
        "written_empty_query_is_kept": [""],
        "turns": ["first turn", '{"city": "Rome", "when": {"day": 3}}'],
    }
    # the inputs themselves reach the agent as written
    assert eval_set.cases[6].turns[0].inputs == {"nights": 2, "city": "Paris"}


def test_empty_inputs_without_a_query_are_refused(problems_of: ProblemsOf) -> None:
    text = """evalward: 1
cases:
  - {id: shorthand, inputs: {}}
  - id: in_a_turn
    turns:
      - {query: fine}
      - {inputs: {}, expect: {response: r}}
"""
    problems = problems_of("x.eval.yaml", text)
    message = "without 'query', 'inputs' needs at least one key: the agent would get an empty query"
    assert [(p.case_id, p.line, p.json_path, p.message) for p in problems] == [
        ("shorthand", 3, "$.cases[0]", message),
        ("in_a_turn", 7, "$.cases[1].turns[1]", message),
    ]


@pytest.mark.parametrize(
    ("inputs", "langsmith", "native"),
    [
        ({"question": "q", "prompt": "p"}, "q", "q"),
        ({"prompt": "p", "context": "c"}, "p", "p"),
        ({"message": "m", "user": "u"}, "m", "m"),
        ({"messages": [["human", "hi"]], "k": 1}, "hi", "hi"),
        ({"question": ""}, "", ""),  # an empty question found is the query, not a reason to fall back
        ({"topic": "refunds"}, "", "refunds"),
        ({"a": 1, "b": [2]}, "", '{"a": 1, "b": [2]}'),
    ],
)
def test_langsmith_and_native_share_the_key_rule_and_only_native_falls_back(
    inputs: dict[str, Any], langsmith: str, native: str
) -> None:
    assert query_from_inputs(inputs) == langsmith
    assert turn_query(None, inputs) == native


ECHO_AGENT = """\
def run(request):
    # answer with exactly the query received, and hand back the inputs to show they arrive unchanged
    return {"response": request["query"], "inputs_seen": request["inputs"]}
"""

RUN_CASES = """\
evalward: 1
metrics: [response_exact, {name: output_match, key: inputs_seen}]
cases:
  - id: question
    inputs: {question: "What is the refund policy?"}
    expect: {response: "What is the refund policy?", outputs: {inputs_seen: {question: "What is the refund policy?"}}}
  - id: one_string
    inputs: {topic: refunds}
    expect: {response: refunds, outputs: {inputs_seen: {topic: refunds}}}
  - id: structured
    inputs: {city: Paris, nights: 2}
    expect: {response: '{"city": "Paris", "nights": 2}', outputs: {inputs_seen: {city: Paris, nights: 2}}}
"""


def test_a_python_agent_run_gets_the_query_from_the_inputs(tmp_path: Path) -> None:
    (tmp_path / "echo.py").write_text(ECHO_AGENT, encoding="utf-8")
    (tmp_path / "cases.eval.yaml").write_text(RUN_CASES, encoding="utf-8")
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalward",
            "run",
            "cases.eval.yaml",
            "--agent",
            "echo.py:run",
            "--no-history",
            "--json",
            "run.json",
        ],
        cwd=tmp_path,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    run = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    received = {case["case_id"]: [turn["actual_response"] for turn in case["invocations"]] for case in run["cases"]}
    assert received == {
        "question": ["What is the refund policy?"],
        "one_string": ["refunds"],
        "structured": ['{"city": "Paris", "nights": 2}'],
    }
    assert [case["status"] for case in run["cases"]] == ["passed"] * 3
