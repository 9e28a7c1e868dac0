"""Write eval sets in other formats: current ADK eval sets (+ `test_config.json`), evalward's native format and
pydantic-evals Dataset files.

Any format evalward reads can be converted (`evalward convert IN --to adk|native|pydantic-evals`): legacy ADK →
current ADK; LangSmith, langchain-benchmarks and multi-agent files → native; native → ADK where expressible;
any → a pydantic-evals Dataset (`pydantic_evals_writer`), whose evaluators are the set's evaluator criteria.
Each conversion returns the text and the list of what the target format could not express, so nothing is
dropped silently. `record` (the `evalward record` command) builds eval sets from observed agent runs and
writes them through the same writers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from evalward.convert.adk_writer import to_adk
from evalward.convert.native_writer import NativeSyntax, dump_native, to_native
from evalward.convert.pydantic_evals_writer import dump_pydantic_evals, to_pydantic_evals
from evalward.loaders import load_paths
from evalward.metrics.registry import known_metric_names
from evalward.model import EvalSet

TargetFormat = Literal["adk", "native", "pydantic_evals"]

__all__ = ["Conversion", "TargetFormat", "convert_eval_set", "convert_file", "dump_adk", "to_adk", "to_native"]


@dataclass
class Conversion:
    """One converted eval set: the file text, an ADK `test_config.json` text if any, what was lost, and notes on
    reading it back."""

    eval_set_id: str
    text: str
    unexpressed: list[str] = field(default_factory=list)
    test_config: str | None = None
    notes: list[str] = field(default_factory=list)


def dump_adk(document: dict[str, Any]) -> str:
    """ADK's writing style (§3.4): indent 2, non-ASCII kept, trailing newline."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def convert_eval_set(
    eval_set: EvalSet, to: TargetFormat, *, syntax: NativeSyntax = "yaml", custom_evaluator_types: Sequence[str] = ()
) -> Conversion:
    """`eval_set` written as `to` (native and pydantic-evals as `syntax`); `custom_evaluator_types` are the
    evaluator classes a pydantic-evals Dataset may name (`pkg.module:Class`)."""
    if to == "pydantic_evals":
        dataset, lost, notes = to_pydantic_evals(eval_set, custom_evaluator_types)
        return Conversion(
            eval_set_id=eval_set.eval_set_id, text=dump_pydantic_evals(dataset, syntax), unexpressed=lost, notes=notes
        )
    if to == "adk":
        document, config, lost = to_adk(eval_set)
        return Conversion(
            eval_set_id=eval_set.eval_set_id,
            text=dump_adk(document),
            unexpressed=lost,
            test_config=dump_adk(config) if config is not None else None,
        )
    native, lost = to_native(eval_set)
    return Conversion(eval_set_id=eval_set.eval_set_id, text=dump_native(native, syntax), unexpressed=lost)


def convert_file(
    path: str | Path,
    to: TargetFormat,
    *,
    syntax: NativeSyntax = "yaml",
    config_path: str | Path | None = None,
    custom_evaluator_types: Sequence[str] = (),
) -> list[Conversion]:
    """Every eval set in `path` (a file or directory) converted; criteria resolved as `evalward run` does."""
    loaded = load_paths(
        [path],
        known_metrics=known_metric_names(),
        config_path=config_path,
        custom_evaluator_types=custom_evaluator_types,
    )
    return [convert_eval_set(s, to, syntax=syntax, custom_evaluator_types=custom_evaluator_types) for s in loaded.sets]
