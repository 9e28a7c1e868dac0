"""One option path: every `evalward run` option reaches `evalward ci`, both action files and the pytest API.

Each option of `evalward run` must have an `evalward ci` option reading the same `EVALWARD_*` variable, and an
Action input mapped onto that variable (`ACTION_INPUTS`), declared in `action.yml` and in `run/action.yml` and
passed by the composite step — or be listed below with the reason it has none.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from evalward._ci import ACTION_INPUTS
from evalward._cli.ci_cmd import ci_command
from evalward._cli.run_cmd import run_command
from evalward._run_values import RunValues
from evalward.testing import evaluate

ROOT = Path(__file__).resolve().parents[2]

NOT_IN_CI: dict[str, str] = {
    "--detailed": "prints every turn to a terminal; in CI the job summary, the check run and the HTML report hold every case",
    "--quiet": "shortens the terminal report; the Action's log is fixed and the full report is in the job summary",
    "--no-history": "evalward ci always stores the run: it is the baseline of later pull requests",
    "--resume": "a CI job starts afresh; a cancelled job is re-run whole",
    "--repo": "taken from the event (GITHUB_REPOSITORY)",
    "--commit": "taken from the event: the PR head SHA or the pushed commit",
    "--branch": "taken from the event: the PR head branch or the pushed branch",
    "--base-sha": "taken from the event: the PR base, whose merge-base with the head git computes",
    "--pr": "taken from the event: the pull request number",
}
"""`evalward run` options `evalward ci` does not have, and why."""

NOT_AN_INPUT: dict[str, str] = {
    "--run-id": "a fixed id would collide across workflow runs; evalward ci has the flag and EVALWARD_RUN_ID for laptops",
    "--group-id": "evalward ci derives the shard group from the workflow run; the flag and EVALWARD_GROUP_ID stay for laptops",
}
"""Options both commands have that are deliberately no Action input, and why."""


def options_of(command: click.Command) -> dict[str, click.Parameter]:
    """`--long-flag` (or PATHS) → the parameter."""
    found: dict[str, click.Parameter] = {}
    for param in command.params:
        if isinstance(param, click.Argument):
            found[param.name.upper() if param.name else "?"] = param
            continue
        longs = [o for o in param.opts if o.startswith("--")]
        found[longs[0]] = param
    return found


def envvar(param: click.Parameter) -> str:
    assert isinstance(param.envvar, str), f"{param.name} has no EVALWARD_* variable"
    return param.envvar


def unset_as_none(value: Any) -> Any:
    """click ≥ 8.3 reports "no default" as its own sentinel; older versions as None."""
    return None if type(value).__name__ == "Sentinel" else value


def action(path: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / path).read_text(encoding="utf-8"))
    return data


def test_every_run_option_reaches_ci_and_both_action_files() -> None:
    run_options = options_of(run_command)
    ci_options = options_of(ci_command)
    ci_by_env = {envvar(p): flag for flag, p in ci_options.items() if p.envvar}
    input_by_env = {variable: name for name, variable in ACTION_INPUTS.items()}
    docker_inputs = set(action("action.yml")["inputs"])
    composite_inputs = set(action("run/action.yml")["inputs"])
    missing: list[str] = []
    for flag, param in run_options.items():
        if flag in NOT_IN_CI:
            assert flag not in ci_options, f"{flag} is in evalward ci after all: drop it from NOT_IN_CI"
            continue
        variable = envvar(param)
        if variable not in ci_by_env:
            missing.append(f"{flag} ({variable}): no evalward ci option reads it")
            continue
        if flag in NOT_AN_INPUT:
            assert variable not in input_by_env, f"{flag} has an input after all: drop it from NOT_AN_INPUT"
            continue
        name = input_by_env.get(variable)
        if name is None:
            missing.append(f"{flag} ({variable}): no action input maps onto it")
        elif name not in docker_inputs or name not in composite_inputs:
            missing.append(f"{flag}: input `{name}` is not declared in action.yml and run/action.yml")
    assert not missing, "\n".join(missing)


def test_every_ci_option_is_an_input_unless_listed() -> None:
    input_by_env = {variable: name for name, variable in ACTION_INPUTS.items()}
    unmapped = [
        flag
        for flag, param in options_of(ci_command).items()
        if param.envvar and envvar(param) not in input_by_env and flag not in NOT_AN_INPUT
    ]
    assert unmapped == []


def test_the_inputs_are_the_mapped_ones_and_identical_in_both_action_files() -> None:
    docker, composite = action("action.yml"), action("run/action.yml")
    assert set(docker["inputs"]) == set(ACTION_INPUTS) | {"github-token"}
    assert composite["inputs"] == docker["inputs"], "run/action.yml must declare exactly action.yml's inputs"
    assert set(composite["outputs"]) == set(docker["outputs"])
    for name, spec in composite["outputs"].items():
        assert spec["value"] == f"${{{{ steps.evalward.outputs.{name} }}}}"
        assert spec["description"] == docker["outputs"][name]["description"]


def test_the_composite_step_passes_every_input_without_a_shell() -> None:
    steps = action("run/action.yml")["runs"]["steps"]
    [step] = [s for s in steps if s.get("id") == "evalward"]
    # No sh in between: Debian's sh drops variables whose names contain dashes (INPUT_EVAL-PATHS).
    assert step["shell"] == "python {0}"
    assert step["env"] == {
        "INPUT_" + name.replace(" ", "_").upper(): f"${{{{ inputs.{name} }}}}"
        for name in action("action.yml")["inputs"]
    }
    assert 'main(["ci"])' in step["run"]


def test_the_run_values_are_exactly_the_shared_option_bundle() -> None:
    shared = {p.name for p in run_command.params} & {p.name for p in ci_command.params}
    assert set(RunValues.model_fields) <= shared
    # Defaults agree: the CLI's are RunValues'.
    context = click.Context(run_command)
    run_defaults = {
        p.name: unset_as_none(p.get_default(context)) for p in run_command.params if isinstance(p, click.Option)
    }
    assert RunValues.model_fields["paths"].default == ()  # the PATHS argument: nothing given
    for name, field in RunValues.model_fields.items():
        if name == "paths":
            continue
        default, expected = run_defaults[name], field.default
        assert default == expected or (default in (None, ()) and expected == ()), name


def test_the_pytest_api_takes_every_run_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run value not among evaluate()'s own ADK-style arguments is a keyword argument of its own name."""
    from evalward.testing._evaluate import _OWN_ARGUMENTS

    prices = tmp_path / "prices.json"
    prices.write_text('{"judge-model": {"input_per_million": 1, "output_per_million": 2}}')
    session = tmp_path / "session.json"
    session.write_text('{"state": {"tz": "UTC"}}')
    given: dict[str, Any] = {
        "agent_processes": 2,
        "rate_limit": "100/s",
        "retries": 0,
        "shard": "1/1",
        "judge_model": "judge-model",
        "judge_base_url": "http://127.0.0.1:9/v1",
        "judge_api_key_env": "JUDGE_KEY",
        "judge_concurrency": 2,
        "judge_prices": str(prices),
        "no_judge_cache": True,
        "user_model": "user-model",
        "user_base_url": "http://127.0.0.1:9/v2",
        "user_max_turns": 7,
        "step": False,
        "stepwise": False,
        "system_prompt": "prompt.md",
        "tools_file": "tools.json",
        "max_steps": 3,
        "cases": ("a*",),
        "sample": 1,
        "initial_session_file": str(session),
        "custom_evaluator_types": ("evals.checks:MyEvaluator",),
    }
    assert set(given) == set(RunValues.model_fields) - _OWN_ARGUMENTS, "a run value is missing from this test"
    evals = tmp_path / "cases.eval.json"
    evals.write_text(
        '{"evalward": 1, "eval_set_id": "s", "cases": [{"id": "a", "query": "hi", "expect": {"response": "hi"}}]}'
    )
    seen: list[Any] = []

    def agent(request: Any) -> str:
        return "hi"

    import evalward.testing._evaluate as api

    original = api.run_options_from

    def spy(values: RunValues, **kwargs: Any) -> Any:
        options = original(values, **kwargs)
        seen.append(options)
        return options

    monkeypatch.setattr(api, "run_options_from", spy)
    run = evaluate(agent, str(evals), num_runs=1, raise_on_failure=False, **given)
    assert run.status == "complete"
    [options] = seen
    assert (options.agent_processes, options.rate_limit_per_s, options.max_retries, options.shard) == (
        2,
        100.0,
        0,
        (1, 1),
    )
    assert (options.user_model, options.user_base_url, options.user_max_turns) == (
        "user-model",
        "http://127.0.0.1:9/v2",
        7,
    )
    assert (options.case_patterns, options.sample, options.initial_session_file) == (["a*"], 1, str(session))
    assert options.custom_evaluator_types == ["evals.checks:MyEvaluator"]
    assert run.case_selection == "--case 'a*' --sample 1 (1 of 1 cases)"
    assert options.judge is not None
    assert (options.judge.model, options.judge.base_url, options.judge.api_key_env) == (
        "judge-model",
        "http://127.0.0.1:9/v1",
        "JUDGE_KEY",
    )
    assert (options.judge.concurrency, options.judge.cache, list(options.judge.prices)) == (2, False, ["judge-model"])
    assert (options.step, options.stepwise) == (False, "off")
    assert options.agent_options == {
        "system_prompt": "prompt.md",
        "tools": "tools.json",
        "max_steps": 3,
        "max_retries": options.max_retries,
    }


def test_the_pytest_api_names_unknown_options() -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) judge_modle; run options: .*judge_model"):
        evaluate(lambda request: "hi", "missing.json", judge_modle="x")


def test_the_docs_document_every_input() -> None:
    page = (ROOT / "docs" / "action.md").read_text(encoding="utf-8")
    table = page.split("## Inputs and outputs", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z-]+)`", table, flags=re.MULTILINE))
    for row in re.findall(r"^\| (`[a-z-]+`(?: / `[a-z-]+`)+) \|", table, flags=re.MULTILINE):
        documented |= set(re.findall(r"`([a-z-]+)`", row))
    assert set(action("action.yml")["inputs"]) - documented == set()


def test_baseline_run_is_one_option_of_ci_and_gate_carried_to_ci_options() -> None:
    from evalward._ci import CiOptions
    from evalward._cli.gate_cmd import gate_command

    for command in (ci_command, gate_command):
        param = options_of(command)["--baseline-run"]
        assert isinstance(param.type, click.Choice)
        assert (param.envvar, list(param.type.choices), param.default) == (
            "EVALWARD_BASELINE_RUN",
            ["missing", "always", "never"],
            "missing",
        )
    assert ACTION_INPUTS["baseline-run"] == "EVALWARD_BASELINE_RUN"
    assert CiOptions.from_values({"baseline_run": "always"}).baseline_run == "always"
    assert CiOptions().baseline_run == "missing"
