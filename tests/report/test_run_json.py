"""run_json.py: the run round-trips through JSON; computed maps are written; bad files are refused clearly."""

from __future__ import annotations

import json

import pytest

from evalward.errors import EvalFileError
from evalward.model import SCHEMA_VERSION, RunResult
from evalward.run_json import load_run_json, render_json


def test_round_trip(sample_run: RunResult):
    text = render_json(sample_run)
    assert load_run_json(text) == sample_run
    assert text.endswith("\n")


def test_computed_metric_maps_are_written(sample_run: RunResult):
    data = json.loads(render_json(sample_run))
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["cases"][1]["metrics"] == {"tool_trajectory_avg_score": 0.0, "response_match_score": 0.62}
    assert data["cases"][1]["invocations"][0]["metrics"] == {
        "tool_trajectory_avg_score": 0.0,
        "response_match_score": 0.62,
    }
    # non-ASCII is kept as is
    assert "réservation_東京" in render_json(sample_run)


def test_newer_schema_is_refused(sample_run: RunResult):
    data = json.loads(render_json(sample_run))
    data["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(EvalFileError) as caught:
        load_run_json(json.dumps(data), source="runs/new.json")
    assert str(caught.value) == (
        "1 problem in eval files:\n"
        f"  runs/new.json: written by a newer evalward (schema_version {SCHEMA_VERSION + 1}); this evalward "
        f"reads up to schema_version {SCHEMA_VERSION} — upgrade evalward to read it; at $.schema_version; "
        f"expected <= {SCHEMA_VERSION}; found {SCHEMA_VERSION + 1}"
    )


def test_invalid_json_names_line_and_column():
    with pytest.raises(EvalFileError) as caught:
        load_run_json('{\n  "run_id": ,\n}', source="r.json")
    problem = caught.value.problems[0]
    assert (problem.path, problem.line, problem.column) == ("r.json", 2, 13)


def test_missing_schema_version_and_wrong_top_level():
    with pytest.raises(EvalFileError, match=r"\$\.schema_version; expected an integer schema_version"):
        load_run_json('{"run_id": "x"}')
    with pytest.raises(EvalFileError, match="expected a JSON object; found list"):
        load_run_json("[]")


def test_every_field_problem_is_reported(sample_run: RunResult):
    data = json.loads(render_json(sample_run))
    data["cases"][0]["status"] = "maybe"
    del data["passed"]
    with pytest.raises(EvalFileError) as caught:
        load_run_json(json.dumps(data))
    paths = sorted(p.json_path or "" for p in caught.value.problems)
    assert paths == ["$.cases[0].status", "$.passed"]
