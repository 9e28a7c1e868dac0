"""`evalward.convert`: every readable format written as native and current ADK, reloaded, and checked.

Round trips compare case content hashes (what makes runs comparable), so "same hash" means the converted
file scores exactly like the original. What a target cannot express must be listed, never dropped silently.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalward.convert import convert_eval_set, convert_file
from evalward.loaders import load_paths
from evalward.metrics.registry import known_metric_names
from evalward.model import EvalSet

FIXTURES = Path(__file__).resolve().parents[1] / "loaders" / "fixtures"

ALL_FIXTURES = [
    "multi_agent/agents.eval.json",
    "adk/home_automation_agent/simple_test.test.json",
    "adk/home_automation_agent/simple_test2.test.json",
    "adk/hello_world_agent/roll_die.test.json",
    "adk/diner_legacy/diner.evalset.json",
    "adk/trip_planner_agent/trip_inquiry.test.json",
    "adk/travel_recorded/travel.evalset.json",
    "langsmith/router.eval.jsonl",
    "langsmith/chinook_e2e.test.json",
    "native/music_store.eval.yaml",
    "benchmarks/relational.eval.json",
]

ADK_EXPRESSIBLE = [f for f in ALL_FIXTURES if f.startswith("adk/")]


def load_one(path: Path) -> EvalSet:
    [loaded] = load_paths([path], known_metrics=known_metric_names()).sets
    return loaded


def reload(tmp_path: Path, name: str, text: str, config: str | None = None) -> EvalSet:
    (tmp_path / name).write_text(text, encoding="utf-8")
    if config is not None:
        (tmp_path / "test_config.json").write_text(config, encoding="utf-8")
    return load_one(tmp_path / name)


def comparable(eval_set: EvalSet) -> list[tuple[str, str]]:
    return [(c.case_id, c.content_hash) for c in eval_set.cases]


def criteria(eval_set: EvalSet) -> list[dict[str, object]]:
    return [m.model_dump() for m in eval_set.criteria.metrics]


@pytest.mark.parametrize("fixture", ALL_FIXTURES)
def test_native_keeps_every_expectation_and_criterion(fixture: str, tmp_path: Path) -> None:
    original = load_one(FIXTURES / fixture)
    for syntax, name in (("yaml", "out.evalward.yaml"), ("json", "out.evalward.json")):
        conversion = convert_eval_set(original, "native", syntax=syntax)  # type: ignore[arg-type]
        again = reload(tmp_path, name, conversion.text)
        assert criteria(again) == criteria(original)
        if conversion.unexpressed:
            # Only ADK session bookkeeping is lost (native keeps the state): compare without it.
            assert all("session app_name" in line for line in conversion.unexpressed)
            for case in original.cases:
                if case.session_input is not None:
                    case.session_input = type(case.session_input)(state=case.session_input.state)
        assert comparable(again) == comparable(original)


@pytest.mark.parametrize("fixture", ADK_EXPRESSIBLE)
def test_adk_files_convert_to_current_adk_without_loss(fixture: str, tmp_path: Path) -> None:
    original = load_one(FIXTURES / fixture)
    conversion = convert_eval_set(original, "adk")
    assert conversion.unexpressed == []
    again = reload(tmp_path, "out.evalset.json", conversion.text, conversion.test_config)
    assert again.format == "adk_evalset"
    assert comparable(again) == comparable(original)
    assert criteria(again) == criteria(original)


def test_native_to_adk_lists_everything_adk_cannot_express(tmp_path: Path) -> None:
    original = load_one(FIXTURES / "native/music_store.eval.yaml")
    conversion = convert_eval_set(original, "adk")
    assert conversion.unexpressed == [
        "case 'refund_invoice': expected step trajectory ['refund_agent', 'refund']",
        "case 'refund_invoice': expected outputs ['route']",
        "case 'refund_invoice': per-case metrics ['state_exact>=1']",
        "case 'refund_invoice': must_pass",
        "case 'refund_invoice': tags ['refund']",
        "case 'album_then_artist' turn 0: tool calls are unchecked here, but ADK always checks them "
        "(it would expect none)",
        "case 'album_then_artist' turn 0: expected step trajectory ['question_answering_agent', 'lookup_album']",
        "case 'album_then_artist' turn 0: expected agents ['question_answering_agent']",
        "case 'album_then_artist' turn 0: expected tools per agent {'question_answering_agent': ['lookup_album']}",
        "case 'album_then_artist' turn 0: reference messages (4)",
        "case 'album_then_artist' turn 1: structured inputs ['artist_hint'] (ADK sends the query text only)",
        "case 'router_only': tool calls are unchecked here, but ADK always checks them (it would expect none)",
        "case 'router_only': structured inputs ['messages'] (ADK sends the query text only)",
        "case 'router_only': expected outputs ['route']",
        "criterion trajectory_subsequence>=1: not an ADK criterion with a threshold",
        "criterion response_rouge1: not an ADK criterion with a threshold",
    ]
    # The ADK criterion is kept, its match type in ADK's spelling.
    assert json.loads(conversion.test_config or "{}") == {
        "criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"}}
    }
    again = reload(tmp_path, "out.evalset.json", conversion.text, conversion.test_config)
    assert [c.case_id for c in again.cases] == [c.case_id for c in original.cases]


def test_agent_attributed_calls_are_written_as_invocation_events() -> None:
    original = load_one(FIXTURES / "adk/travel_recorded/travel.evalset.json")
    document = json.loads(convert_eval_set(original, "adk").text)
    events = document["eval_cases"][0]["conversation"][0]["intermediate_data"]["invocation_events"]
    assert [(e["author"], e["content"]["parts"][0].get("function_call", {}).get("name")) for e in events][:3] == [
        ("travel_root", "transfer_to_agent"),
        ("flights", "search_flights"),
        ("flights", "book_flight"),
    ]


def test_a_simulated_user_case_keeps_its_plan_and_persona(tmp_path: Path) -> None:
    """A scenario case is written as ADK's `conversation_scenario`, not as a conversation of its first
    message (which would drop the plan and the persona without a word)."""
    original = load_one(FIXTURES / "scenario/conversation_scenario.test.json")
    conversion = convert_eval_set(original, "adk")
    written = json.loads(conversion.text)["eval_cases"][0]
    assert "conversation" not in written
    assert written["conversation_scenario"]["conversation_plan"] == (
        "Ask for a 3 day trip to Paris, then accept the plan."
    )
    assert written["conversation_scenario"]["user_persona"]["id"] == "NOVICE"
    again = reload(tmp_path, "out.evalset.json", conversion.text, conversion.test_config)
    assert again.cases[0].scenario == original.cases[0].scenario
    assert again.cases[0].content_hash == original.cases[0].content_hash
    # The native format has no scenarios: converting there says so instead of keeping only the first message.
    native = convert_eval_set(original, "native")
    assert any("simulated-user scenario" in line and "'simulated_user'" in line for line in native.unexpressed)


def test_convert_file_reads_directories_and_resolves_adk_criteria() -> None:
    conversions = convert_file(FIXTURES / "adk/hello_world_agent", "native")
    assert [c.eval_set_id for c in conversions] == ["roll_die_set"]
    assert "tool_trajectory_avg_score" in conversions[0].text


@pytest.mark.adk
@pytest.mark.parametrize(
    "fixture",
    [
        *ADK_EXPRESSIBLE,
        "native/music_store.eval.yaml",
        "langsmith/router.eval.jsonl",
        "scenario/conversation_scenario.test.json",
    ],
)
def test_adk_reads_our_output_and_writes_it_back_byte_for_byte_the_same(fixture: str) -> None:
    """ADK 2.13's own EvalSet model parses the file, and its writing rules (§3.4) reproduce it exactly."""
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

    conversion = convert_eval_set(load_one(FIXTURES / fixture), "adk")
    parsed = AdkEvalSet.model_validate_json(conversion.text)
    rewritten = parsed.model_dump_json(indent=2, exclude_unset=True, exclude_defaults=True, exclude_none=True)
    assert rewritten + "\n" == conversion.text
