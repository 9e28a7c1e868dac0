"""The `evalward` console script (and `python -m evalward`): what must happen before the command-line interface
loads, then the interface.

A run that stores its history starts its writer process here (`store.writer_process.prestart`), and the cyclic
collector is paused for start-up (`evalward.gc_tuning`), before click, pydantic and evalward's option models are
imported: the writer's own start-up (an interpreter and SQLAlchemy, ~0.2 s here) is what a 1-case run waits for
at its end, and importing the interface first (~40 ms) started it that much later. This module imports nothing
else at its top.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def stores_a_run(args: list[str]) -> bool:
    """`evalward run …` that will write its history: its writer process is worth starting before anything else
    loads. A guess from the words alone; the command itself decides (a prestarted writer it does not take is
    closed at exit)."""
    skip = {"--no-history", "--help", "-h"}
    no_history = os.environ.get("EVALWARD_NO_HISTORY", "").lower() in {"1", "true", "yes", "on"}
    return bool(args) and args[0] == "run" and not no_history and not skip.intersection(args)


def main() -> Any:
    """The console script: prepare start-up (module docstring), then `evalward._cli.main.main`."""
    from evalward.gc_tuning import pause_during_start_up  # start-up: the collector paused before the imports

    pause_during_start_up()
    if stores_a_run(sys.argv[1:]):
        from evalward.store.writer_process import prestart  # start-up: only a run that stores its history

        prestart()
    from evalward._cli.main import main as run_command_line  # start-up: after the writer has started

    return run_command_line()
