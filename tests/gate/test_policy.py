"""GatePolicy: defaults from docs/gate.md, strict config, one primary metric, schema and digest."""

from __future__ import annotations

from datetime import date

import jsonschema
import pytest
from pydantic import ValidationError

from evalward.gate import GatePolicy, MetricOverride, QuarantineEntry


def test_defaults_follow_gate_md() -> None:
    policy = GatePolicy()
    # α is the false-alarm rate over both looks (docs/gate.md §6): 0.005 keeps an unchanged PR's false fails
    # under 1 in 100 as measured (benchmarks/gate_power.py); α_pass is the pass bound's level.
    assert (policy.alpha, policy.alpha_pass, policy.delta_block, policy.delta_ni) == (0.005, 0.05, 0.02, 0.05)
    assert (policy.inference, policy.top_up.first_look_share, policy.top_up.max_repetitions) == ("suite", 0.2, 6)
    assert (policy.errors, policy.missing_cases, policy.on_missing_baseline) == ("compare", "fail", "error")
    assert (policy.thresholds, policy.newly_broken_share, policy.error_rate_share) == ("change", 0.1, 0.1)
    assert (policy.resamples, policy.exact_enumeration_max_n, policy.correction) == (10_000, 16, "holm")
    assert (policy.cost.gate, policy.cost.tau, policy.latency.gate) == (False, 0.10, False)


def test_unknown_keys_are_refused() -> None:
    with pytest.raises(ValidationError, match="delta_blok"):
        GatePolicy.model_validate({"delta_blok": 0.1})


def test_overrides_replace_margins() -> None:
    policy = GatePolicy(overrides={"f1": MetricOverride(delta_block=0.05)})
    assert policy.margins("f1") == (0.05, 0.05)
    assert policy.margins("other") == (0.02, 0.05)


def test_primary_from_override_or_field() -> None:
    assert GatePolicy(overrides={"f1": MetricOverride(primary=True)}).primary() == "f1"
    assert GatePolicy(primary_metric="f1").primary() == "f1"
    with pytest.raises(ValidationError, match="at most one primary metric; found f1, f2"):
        GatePolicy(primary_metric="f2", overrides={"f1": MetricOverride(primary=True)})


def test_quarantine_entry_matching() -> None:
    anywhere = QuarantineEntry(case_id="c1", until=date(2025, 1, 1), reason="flaky")
    one_set = QuarantineEntry(case_id="c1", eval_set_id="s", until=date(2025, 1, 1), reason="flaky")
    assert anywhere.matches("t", "c1") and one_set.matches("s", "c1")
    assert not one_set.matches("t", "c1")


def test_json_schema_validates_a_config() -> None:
    schema = GatePolicy.model_json_schema()
    jsonschema.validate({"alpha": 0.1, "quarantine": [{"case_id": "c", "until": "2025-01-01", "reason": "r"}]}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"errors": "explode"}, schema)


def test_digest_is_stable_and_sensitive() -> None:
    assert GatePolicy().digest() == GatePolicy().digest()
    assert GatePolicy().digest() != GatePolicy(alpha=0.1).digest()
