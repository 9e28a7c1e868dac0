"""What makes two runs comparable: criteria (judge included), agent, scorer version; not case content."""

from __future__ import annotations

from store_factories import make_run

from evalward.model import MetricSpec
from evalward.store import comparability_key, instrument_differences
from evalward.store.comparability import scorer_version


def test_case_content_paths_and_context_do_not_change_the_key() -> None:
    base = make_run("a")
    other = make_run("b", case_ids=["x", "y", "z"], commit="other", branch="feature", fingerprint="fp-2")
    other.eval_sets[0].path = "elsewhere/smoke.json"
    assert comparability_key(other) == comparability_key(base)


def test_a_different_judge_prompt_changes_the_key_and_is_explained() -> None:
    base = make_run("a")
    judged = make_run("b")
    judged.eval_sets[0].criteria[1] = MetricSpec(name="response_match", options={"judge_prompt": "Be strict."})
    assert comparability_key(judged) != comparability_key(base)
    assert instrument_differences(base, judged) == [
        "criteria of eval set 'smoke' differ (metrics, thresholds or judge options)"
    ]


def test_criteria_order_does_not_matter() -> None:
    base = make_run("a")
    reordered = make_run("b")
    reordered.eval_sets[0].criteria.reverse()
    assert comparability_key(reordered) == comparability_key(base)


def test_scorer_version_is_major_minor() -> None:
    assert scorer_version("0.3.1") == "0.3"
    assert scorer_version("dev") == "dev"
    patched = make_run("b").model_copy(update={"evalward_version": "0.1.7"})
    minor = make_run("c").model_copy(update={"evalward_version": "0.2.0"})
    assert comparability_key(patched) == comparability_key(make_run("a"))
    assert instrument_differences(make_run("a"), minor) == ["scorer version differs (evalward 0.2 vs 0.1)"]
