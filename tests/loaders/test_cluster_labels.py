"""Cluster labels on cases: native `cluster`, LangSmith `metadata.cluster`, the schema and conversion."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from evalward.convert.adk_writer import to_adk
from evalward.convert.native_writer import to_native
from evalward.loaders import native_json_schema
from evalward.model import EvalCase, Invocation

from .conftest import LoadText, ProblemsOf

NATIVE = """\
evalward: 1
eval_set_id: docs
cases:
  - {id: a1, cluster: doc-a, query: find alpha}
  - {id: a2, cluster: doc-a, query: find beta}
  - {id: b1, query: find gamma}
"""


def test_native_cases_carry_their_cluster(load_text: LoadText) -> None:
    eval_set = load_text("x.eval.yaml", NATIVE)
    assert [(c.case_id, c.cluster) for c in eval_set.cases] == [("a1", "doc-a"), ("a2", "doc-a"), ("b1", None)]


def test_an_empty_native_cluster_is_refused(problems_of: ProblemsOf) -> None:
    [problem] = problems_of("x.eval.yaml", "evalward: 1\ncases:\n  - {id: a, cluster: '', query: q}\n")
    assert problem.json_path == "$.cases[0].cluster"
    assert problem.case_id == "a"
    assert "at least 1 character" in problem.message


def test_the_cluster_label_is_not_part_of_the_content_hash() -> None:
    # Relabelling must keep a case comparable with its baseline: the hash ignores the label.
    plain = EvalCase(case_id="a", turns=[Invocation(query="q")])
    labelled = EvalCase(case_id="a", turns=[Invocation(query="q")], cluster="doc-a")
    assert plain.content_hash == labelled.content_hash
    assert plain.content_hash != EvalCase(case_id="a", turns=[Invocation(query="other")]).content_hash


def test_langsmith_metadata_cluster(load_text: LoadText) -> None:
    examples = [
        {"id": "e1", "inputs": {"question": "q1"}, "metadata": {"cluster": "template-3"}},
        {"id": "e2", "inputs": {"question": "q2"}, "metadata": {"cluster": 7}},
        {"id": "e3", "inputs": {"question": "q3"}, "metadata": {"source": "x"}},
        {"id": "e4", "inputs": {"question": "q4"}},
    ]
    eval_set = load_text("x.eval.json", json.dumps(examples))
    assert [c.cluster for c in eval_set.cases] == ["template-3", "7", None, None]


def test_a_langsmith_cluster_that_is_not_a_label_is_refused(problems_of: ProblemsOf) -> None:
    examples = [
        {"id": "e1", "inputs": {"question": "q1"}, "metadata": {"cluster": ["a", "b"]}},
        {"id": "e2", "inputs": {"question": "q2"}, "metadata": {"cluster": ""}},
    ]
    problems = problems_of("x.eval.json", json.dumps(examples))
    assert [(p.json_path, p.case_id, p.expected, p.found) for p in problems] == [
        ("$[0].metadata.cluster", "e1", "a non-empty string (or an integer)", 'array ["a", "b"]'),
        ("$[1].metadata.cluster", "e2", "a non-empty string (or an integer)", 'string ""'),
    ]
    assert problems[0].message == "a cluster label must be a non-empty string"


def _schema_errors(data: Any) -> list[str]:
    return [e.message for e in jsonschema.Draft202012Validator(native_json_schema()).iter_errors(data)]


def test_the_json_schema_describes_cluster() -> None:
    case_schema = native_json_schema()["$defs"]["NativeCase"]["properties"]["cluster"]
    assert "same template, same document" in case_schema["description"]
    assert _schema_errors({"evalward": 1, "cases": [{"id": "a", "query": "q", "cluster": "doc-a"}]}) == []
    assert _schema_errors({"evalward": 1, "cases": [{"id": "a", "query": "q", "cluster": 3}]}) != []


def test_conversion_keeps_the_label_in_native_and_reports_it_lost_in_adk(load_text: LoadText) -> None:
    eval_set = load_text("x.eval.yaml", NATIVE)
    document, lost = to_native(eval_set)
    assert [c.get("cluster") for c in document["cases"]] == ["doc-a", "doc-a", None]
    assert lost == []
    _, _, adk_lost = to_adk(eval_set)
    assert [line for line in adk_lost if "cluster" in line] == [
        "case 'a1': cluster 'doc-a'",
        "case 'a2': cluster 'doc-a'",
    ]
