"""`make_agent` (src/evalward/runners/__init__.py): which runner each target form selects."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.errors import UsageError
from evalward.runners import TARGET_FORMS, make_agent
from evalward.runners.http import HttpAgent
from evalward.runners.process import SubprocessAgent
from evalward.runners.python import PythonAgent


@pytest.mark.parametrize(
    ("target", "runner", "kind"),
    [
        ("my_pkg.agent:root_agent", PythonAgent, "python"),
        ("agents/bot.py:root", PythonAgent, "python"),
        ("bot.py:Bot.answer", PythonAgent, "python"),
        ("cmd:node agent.js --serve", SubprocessAgent, "subprocess"),
        ("http://127.0.0.1:8080/run", HttpAgent, "http"),
        ("https://agents.example.com/run", HttpAgent, "http"),
    ],
)
def test_each_target_form_selects_its_runner(target: str, runner: type, kind: str) -> None:
    agent = make_agent(target)
    assert isinstance(agent, runner)
    assert agent.target.kind == kind
    assert len(agent.target.config_hash) == 64


@pytest.mark.parametrize(
    "target",
    ["my_agent", "my_agent:", ":root", "my agent:root", "pkg.mod:1fn", "agents/bot:root", "pkg-name.mod:root"],
)
def test_malformed_targets_are_usage_errors_listing_the_accepted_forms(target: str) -> None:
    with pytest.raises(UsageError) as caught:
        make_agent(target)
    assert TARGET_FORMS in str(caught.value)
    assert repr(target) in str(caught.value)


def test_a_path_without_py_gets_a_hint() -> None:
    with pytest.raises(UsageError, match=r"a file path must end in `\.py`"):
        make_agent("agents/bot:root")


def test_a_pool_needs_at_least_one_process() -> None:
    with pytest.raises(UsageError, match="at least 1"):
        make_agent("cmd:python a.py", processes=0)


def test_cwd_is_passed_to_the_runner(tmp_path: Path) -> None:
    agent = make_agent("bot.py:root", cwd=tmp_path)
    assert isinstance(agent, PythonAgent)
