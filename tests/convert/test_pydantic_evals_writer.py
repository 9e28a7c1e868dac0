"""`evalward convert --to pydantic-evals`: Dataset files that pydantic-evals' own `Dataset.from_file` reads back as
the dataset they came from, and that evalward reloads as the same eval set; what the format cannot hold is listed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from pydantic_evals import Dataset
from tests.convert.test_convert import ALL_FIXTURES, FIXTURES
from tests.fakes.pydantic_evals_task import CUSTOM_PATHS, CUSTOM_TYPES
from tests.loaders.test_pydantic_evals_dataset import capitals

from evalward._cli.main import cli
from evalward.convert import convert_eval_set, convert_file
from evalward.loaders import load_paths
from evalward.metrics.custom import evaluator_spec
from evalward.model import Criteria, EvalCase, EvalSet, Invocation, MetricSpec, ToolCall

BUILTIN = "pydantic_evals.evaluators"


def same_dataset(written: Dataset[Any, Any, Any], original: Dataset[Any, Any, Any]) -> None:
    """The two datasets hold the same cases (an unnamed case gets its report name) and evaluators."""

    def cases(dataset: Dataset[Any, Any, Any]) -> list[Any]:
        return [
            (c.name or f"Case {i}", c.inputs, c.metadata, c.expected_output, [e.as_spec() for e in c.evaluators])
            for i, c in enumerate(dataset.cases, 1)
        ]

    assert written.name == original.name
    assert cases(written) == cases(original)
    assert [e.as_spec() for e in written.evaluators] == [e.as_spec() for e in original.evaluators]


@pytest.mark.parametrize("syntax", ["yaml", "json"])
def test_a_dataset_round_trips_through_evalward(tmp_path: Path, syntax: str) -> None:
    original = capitals()
    source = tmp_path / f"capitals.{syntax}"
    original.to_file(source, custom_evaluator_types=CUSTOM_TYPES)
    [conversion] = convert_file(source, "pydantic_evals", syntax=syntax, custom_evaluator_types=CUSTOM_PATHS)  # type: ignore[arg-type]
    assert conversion.unexpressed == []
    assert conversion.notes == [
        "Dataset.from_file reads it with custom_evaluator_types=[HasNeedle, LengthScore, Grade] (your evaluator "
        "classes)"
    ]
    out = tmp_path / f"out.eval.{syntax}"
    out.write_text(conversion.text)
    same_dataset(Dataset[Any, Any, Any].from_file(out, custom_evaluator_types=CUSTOM_TYPES), original)
    # ... and evalward reads it back as the eval set it wrote: same criteria, same cases.
    [before] = load_paths([source], custom_evaluator_types=CUSTOM_PATHS).sets
    [after] = load_paths([out], custom_evaluator_types=CUSTOM_PATHS).sets
    assert after.content_hash == before.content_hash


def test_the_written_yaml_reads_like_to_file_output(tmp_path: Path) -> None:
    source = tmp_path / "capitals.yaml"
    capitals().to_file(source, custom_evaluator_types=CUSTOM_TYPES)
    [conversion] = convert_file(source, "pydantic_evals", custom_evaluator_types=CUSTOM_PATHS)
    document = yaml.safe_load(conversion.text)
    assert list(document) == ["name", "cases", "evaluators"]
    assert document["evaluators"] == [
        "EqualsExpected",
        {"IsInstance": "str"},
        {"MaxDuration": 30},
        "HasNeedle",
        "LengthScore",
        "Grade",
    ]
    assert document["cases"][0]["evaluators"] == [
        {"Contains": "Paris"},
        {"Contains": {"value": "paris", "case_sensitive": False}},
        {"HasNeedle": "France"},
    ]


def spec(name: str, cls: str, args: Any = None, threshold: float | None = None) -> MetricSpec:
    return evaluator_spec(name, f"{BUILTIN}:{cls}", args=args, threshold=threshold)


def test_names_thresholds_and_what_pydantic_evals_cannot_hold_are_listed(tmp_path: Path) -> None:
    eval_set = EvalSet(
        eval_set_id="shop",
        name="Shop",
        format="native",
        criteria=Criteria(
            metrics=[
                spec("has_paris", "Contains", ["Paris"]),
                spec("fast", "MaxDuration", {"seconds": 5}),
                spec("Equals", "Equals", [1, 2]),
                spec("score", "EqualsExpected", threshold=0.5),
                MetricSpec(name="tool_trajectory_avg_score", threshold=1.0),
                evaluator_spec("polite", "evals.checks:polite"),
            ]
        ),
        cases=[
            EvalCase(
                case_id="refund",
                description="a refund",
                tags=["money"],
                turns=[
                    Invocation(
                        query="Refund order 7",
                        inputs={"order": 7},
                        expected_response="Refunded.",
                        expected_tool_calls=[ToolCall(name="refund", args={"order": 7})],
                    ),
                    Invocation(query="Thanks"),
                ],
                metrics=[spec("has_paris", "Contains", ["Lyon"])],
                must_pass=True,
            )
        ],
    )
    conversion = convert_eval_set(eval_set, "pydantic_evals")
    document = yaml.safe_load(conversion.text)
    assert document == {
        "name": "shop",
        "cases": [
            {
                "name": "refund",
                "inputs": {"order": 7},
                "metadata": {"description": "a refund", "tags": ["money"]},
                "expected_output": "Refunded.",
                "evaluators": [{"Contains": {"value": "Lyon", "evaluation_name": "has_paris"}}],
            }
        ],
        "evaluators": [
            {"Contains": {"value": "Paris", "evaluation_name": "has_paris"}},
            {"MaxDuration": {"seconds": 5}},
            {"Equals": {"value": 1, "evaluation_name": 2}},  # two positional arguments, as keywords
            {"EqualsExpected": {"evaluation_name": "score"}},
        ],
    }
    assert conversion.unexpressed == [
        "criterion 'score': threshold 0.5 (pydantic-evals has none: a bool passes or fails, a number is a score)",
        "criterion tool_trajectory_avg_score>=1: an evalward metric (pydantic-evals runs evaluators)",
        "criterion 'polite' (evals.checks:polite): not a pydantic-evals evaluator class (list it in "
        "custom_evaluator_types if it is one)",
        "criterion 'fast': pydantic-evals names its results 'MaxDuration'",  # MaxDuration takes no evaluation_name
        "the set's name 'Shop' (the dataset is named by the eval set id)",
        "case 'refund': criterion 'has_paris' is replaced by the case's own: pydantic-evals runs a case's "
        "evaluators in addition to the dataset's",
        "case 'refund': the query 'Refund order 7' (the inputs object is written; the query comes from it)",
        "case 'refund': turns after the first (1): a pydantic-evals case is one call",
        "case 'refund': expected tool calls",
        "case 'refund': must_pass",
    ]
    # Whatever was lost, pydantic-evals reads what was written.
    out = tmp_path / "shop.yaml"
    out.write_text(conversion.text)
    assert [c.name for c in Dataset[Any, Any, Any].from_file(out).cases] == ["refund"]


@pytest.mark.parametrize("fixture", ALL_FIXTURES)
def test_every_readable_format_converts_to_a_dataset_pydantic_evals_reads(fixture: str, tmp_path: Path) -> None:
    for conversion in convert_file(FIXTURES / fixture, "pydantic_evals", syntax="json"):
        out = tmp_path / f"{conversion.eval_set_id}.json"
        out.write_text(conversion.text)
        dataset = Dataset[Any, Any, Any].from_file(out)
        assert len(dataset.cases) == len(load_paths([FIXTURES / fixture]).sets[0].cases)


def invoke(args: list[str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_the_cli_writes_a_dataset_with_the_settings_custom_evaluator_types(tmp_path: Path) -> None:
    source = tmp_path / "capitals.yaml"
    capitals().to_file(source, custom_evaluator_types=CUSTOM_TYPES)
    settings = tmp_path / "evalward.toml"
    settings.write_text(f"custom_evaluator_types = {json.dumps(CUSTOM_PATHS)}\n")
    out = tmp_path / "out"
    code, _, stderr = invoke(
        ["--config", str(settings), "convert", str(source), "--to", "pydantic-evals", "--out", str(out)]
    )
    assert code == 0, stderr
    assert stderr.splitlines() == [
        "note (capitals): Dataset.from_file reads it with custom_evaluator_types=[HasNeedle, LengthScore, Grade] "
        "(your evaluator classes)",
        f"wrote {out / 'capitals.eval.yaml'}",
    ]
    same_dataset(
        Dataset[Any, Any, Any].from_file(out / "capitals.eval.yaml", custom_evaluator_types=CUSTOM_TYPES), capitals()
    )
    # Without the settings, the user's classes are unknown names: the file is refused, located, before converting.
    empty = tmp_path / "empty.toml"
    empty.write_text("repeat = 1\n")
    with pytest.raises(Exception, match="unknown evaluator 'HasNeedle'"):
        invoke(["--config", str(empty), "convert", str(source), "--to", "pydantic-evals"])


def test_the_cli_lists_losses_and_strict_fails(tmp_path: Path) -> None:
    code, stdout, stderr = invoke(
        [
            "convert",
            str(FIXTURES / "langsmith/router.eval.jsonl"),
            "--to",
            "pydantic-evals",
            "--syntax",
            "json",
            "--strict",
        ]
    )
    assert code == 1
    assert json.loads(stdout)["name"] == "router"
    assert "not expressible in pydantic-evals (router): criterion output_match>=1 " in stderr
    assert stderr.rstrip().endswith("could not be expressed in pydantic-evals (listed above)")
