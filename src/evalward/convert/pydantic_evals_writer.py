"""`EvalSet` → a pydantic-evals Dataset file (`Dataset.from_file` reads it back), as YAML or JSON.

The reverse of `loaders.pydantic_evals_dataset`, written as `Dataset.to_file` writes (keys in its order, evaluators
in their short forms) but without a schema file or `$schema` reference:
- the set: `name` = the eval set id; its criteria that are pydantic-evals evaluators → the dataset's `evaluators`;
- each case: `name` = the case id; its (first) turn's `inputs` object, or its query when it has none → `inputs`;
  `metadata` (with the case's description, tags and cluster); the expected outputs object, or the expected
  response → `expected_output`; the evaluators it runs beyond the dataset's → its `evaluators`.

An evaluator is a criterion whose code is a pydantic-evals built-in (`pydantic_evals.*:Class`) or a class listed
in `custom_evaluator_types` (whose files name it by its class name: `Dataset.from_file` then needs it in its own
`custom_evaluator_types`, which a note says). Its arguments are written as pydantic-evals serialises them: none →
the bare name, one positional → `{Name: argument}` (the long form `{name, arguments}` when that argument is an
object), keywords → `{Name: {keyword: value}}`. A criterion whose name is not the one pydantic-evals would give
the evaluator's results gets `evaluation_name` when the built-in takes one.

Everything else is listed, never dropped silently: evalward metrics and other user code (LangSmith functions,
ADK custom metrics), thresholds (pydantic-evals has none: a bool passes or fails, a number is a score), criterion
names it cannot reproduce, turns after the first, structured expectations (tool calls, trajectories, agents,
state), sessions, scenarios, reference messages and `must_pass`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalward.loaders.native import turn_query
from evalward.loaders.pydantic_evals_dataset import BUILTIN_EVALUATORS, custom_evaluator_names, result_names
from evalward.metrics.custom import CUSTOM_OPTION, evaluator_args, function_path, is_custom, split_path
from evalward.model import EvalCase, EvalSet, Invocation, MetricSpec


@dataclass
class _Entry:
    """A criterion written as an evaluator: its class name and arguments, and the criterion it came from."""

    name: str
    args: dict[str, Any] | list[Any] | None
    builtin: bool
    spec: MetricSpec

    @property
    def key(self) -> tuple[str, str]:
        """What makes two entries the same evaluator, whatever their criterion names."""
        return function_path(self.spec), json.dumps(self.args, sort_keys=True, default=str)

    def result_name(self) -> str:
        """The name pydantic-evals gives this evaluator's results, before repeated names are numbered."""
        given = self.args.get("evaluation_name") if isinstance(self.args, dict) else None
        if (
            self.builtin
            and isinstance(given, str)
            and "evaluation_name" in BUILTIN_EVALUATORS.get(self.name, ((), 0))[0]
        ):
            return given
        return self.name

    def name_as(self, wanted: str) -> bool:
        """Give the evaluator `evaluation_name` = `wanted`; False when it takes none."""
        parameters = BUILTIN_EVALUATORS.get(self.name, ((), 0))[0] if self.builtin else ()
        if "evaluation_name" not in parameters:
            return False
        if isinstance(self.args, list):
            if len(self.args) > len(parameters):
                return False
            self.args = dict(zip(parameters, self.args, strict=False))
        self.args = {**(self.args or {}), "evaluation_name": wanted}
        return True

    def written(self) -> Any:
        """pydantic-evals' short form (`NamedSpec.serialize`), or its long form for one object argument."""
        if self.args is None or self.args == {}:
            return self.name
        if isinstance(self.args, dict):
            return {self.name: self.args}
        (only,) = self.args
        if isinstance(only, dict) and all(isinstance(k, str) for k in only):
            return {"name": self.name, "arguments": [only]}
        return {self.name: only}


class _Writer:
    def __init__(self, eval_set: EvalSet, custom_evaluator_types: Sequence[str]) -> None:
        self.eval_set = eval_set
        self.custom = {split_path(path): name for name, path in custom_evaluator_names(custom_evaluator_types).items()}
        self.lost: list[str] = []
        self.custom_used: dict[str, None] = {}

    def entry(self, spec: MetricSpec, where: str) -> _Entry | None:
        """The criterion as an evaluator; None after listing why it cannot be one."""
        if not is_custom(spec):
            self.lost.append(f"{where}criterion {spec.describe()}: an evalward metric (pydantic-evals runs evaluators)")
            return None
        path = function_path(spec)
        module, attribute = split_path(path)
        args = evaluator_args(spec)
        builtin = module.split(".")[0] == "pydantic_evals"
        name = attribute.rpartition(".")[2]
        if not builtin:
            if (module, attribute) not in self.custom:
                self.lost.append(
                    f"{where}criterion {spec.name!r} ({path}): not a pydantic-evals evaluator class (list it in "
                    "custom_evaluator_types if it is one)"
                )
                return None
            name = self.custom[(module, attribute)]
            self.custom_used[name] = None
        if isinstance(args, list) and len(args) > 1:
            parameters = BUILTIN_EVALUATORS.get(name, ((), 0))[0] if builtin else ()
            if len(args) > len(parameters):
                self.lost.append(
                    f"{where}criterion {spec.name!r} ({path}): {len(args)} positional arguments (a pydantic-evals "
                    "file gives one, or keywords)"
                )
                return None
            args = dict(zip(parameters, args, strict=False))
        if spec.threshold is not None:
            self.lost.append(
                f"{where}criterion {spec.name!r}: threshold {spec.threshold:g} (pydantic-evals has none: a bool "
                "passes or fails, a number is a score)"
            )
        config = spec.options.get(CUSTOM_OPTION, {})
        extra = sorted({*spec.options} - {CUSTOM_OPTION} | {*config} - {"code_config", "args"})
        if extra:
            self.lost.append(f"{where}criterion {spec.name!r}: options {', '.join(extra)}")
        return _Entry(name, args, builtin, spec)

    def name_entries(
        self, entries: list[_Entry], fixed: Sequence[_Entry], fixed_names: Sequence[str | None], where: str
    ) -> None:
        """Give each of `entries` the result name its criterion has, with `evaluation_name` where needed; then
        check the names `fixed` (the dataset's evaluators, which cannot change here) get after them against
        `fixed_names` (None: not checked). List every name pydantic-evals would give otherwise."""
        every = [*entries, *fixed]
        wanted = [*(e.spec.name for e in entries), *fixed_names]
        plain = result_names([e.result_name() for e in every])
        checked = [(e, name, want) for e, name, want in zip(every, plain, wanted, strict=True) if want is not None]
        if Counter((e.key, name) for e, name, _ in checked) == Counter((e.key, want) for e, _, want in checked):
            return  # identical evaluators may trade names: the results come out named as the criteria are
        for index, entry in enumerate(entries):
            if self._name(entries[: index + 1]) != entry.spec.name:
                entry.name_as(entry.spec.name)
            given = self._name(entries[: index + 1])
            if given != entry.spec.name:
                self.lost.append(f"{where}criterion {entry.spec.name!r}: pydantic-evals names its results {given!r}")
        names = result_names([e.result_name() for e in [*entries, *fixed]])[len(entries) :]
        alone = result_names([e.result_name() for e in fixed])  # what the set's own check already listed
        for fixed_name, name, name_alone in zip(fixed_names, names, alone, strict=True):
            if fixed_name is not None and name != fixed_name and name != name_alone:
                self.lost.append(f"{where}criterion {fixed_name!r}: pydantic-evals names its results {name!r}")

    @staticmethod
    def _name(entries: Sequence[_Entry]) -> str:
        return result_names([e.result_name() for e in entries])[-1]

    def case(self, case: EvalCase, dataset: Sequence[_Entry]) -> dict[str, Any]:
        where = f"case {case.case_id!r}: "
        own, dataset_names = self.own_entries(case, dataset, where)
        if own:
            self.name_entries(own, dataset, dataset_names, where)
        turn = case.turns[0]
        written: dict[str, Any] = {"name": case.case_id, "inputs": self.inputs(turn, where)}
        metadata = case.described_metadata()
        if metadata:
            written["metadata"] = metadata
        if turn.expected_outputs:
            written["expected_output"] = dict(turn.expected_outputs)
            if turn.expected_response is not None:
                written["expected_output"].setdefault("response", turn.expected_response)
                self.lost.append(
                    f"{where}the expected response, written as expected_output['response'] beside the other "
                    "expected outputs"
                )
        elif turn.expected_response is not None:
            written["expected_output"] = turn.expected_response
        if own:
            written["evaluators"] = [e.written() for e in own]
        self.case_losses(case, where)
        return written

    def own_entries(
        self, case: EvalCase, dataset: Sequence[_Entry], where: str
    ) -> tuple[list[_Entry], list[str | None]]:
        """The evaluators `case` runs beyond the dataset's — its criteria less one of each dataset evaluator (a
        criterion inherited from the set, else a criterion of the case's own that runs the same evaluator) — and
        the name each dataset evaluator has in the case (None when the case replaced it)."""
        if not case.metrics:
            return [], [e.spec.name for e in dataset]
        entries = [e for spec in case.metrics if (e := self.entry(spec, where)) is not None]
        overridden = {spec.name for spec in case.metrics}
        names: list[str | None] = []
        for evaluator in dataset:
            if evaluator.spec.name not in overridden:
                names.append(evaluator.spec.name)
                continue
            match = next((e for e in reversed(entries) if e.key == evaluator.key), None)
            if match is None:
                self.lost.append(
                    f"{where}criterion {evaluator.spec.name!r} is replaced by the case's own: pydantic-evals runs a "
                    "case's evaluators in addition to the dataset's"
                )
                names.append(None)
                continue
            names.append(match.spec.name)
            entries.remove(match)
        return entries, names

    def inputs(self, turn: Invocation, where: str) -> Any:
        if not turn.inputs:
            return turn.query

        if turn.query and turn.query != turn_query(None, turn.inputs):
            self.lost.append(f"{where}the query {turn.query!r} (the inputs object is written; the query comes from it)")
        return dict(turn.inputs)

    def case_losses(self, case: EvalCase, where: str) -> None:
        turn = case.turns[0]
        if len(case.turns) > 1:
            self.lost.append(f"{where}turns after the first ({len(case.turns) - 1}): a pydantic-evals case is one call")
        if case.scenario is not None:
            self.lost.append(f"{where}a simulated-user scenario")
        for label, value in (
            ("expected tool calls", turn.expected_tool_calls),
            ("expected trajectory", turn.expected_trajectory),
            ("expected agents", turn.expected_agents),
            ("expected tools per agent", turn.expected_agent_tools),
            ("expected intermediate responses", turn.expected_intermediate_responses),
            ("reference messages", turn.reference_messages),
            ("expected state", case.expected_state),
            ("session", case.session_input),
        ):
            if value is not None:
                self.lost.append(f"{where}{label}")
        if case.must_pass:
            self.lost.append(f"{where}must_pass")


def to_pydantic_evals(
    eval_set: EvalSet, custom_evaluator_types: Sequence[str] = ()
) -> tuple[dict[str, Any], list[str], list[str]]:
    """(Dataset document, what could not be expressed, notes for reading it back)."""
    writer = _Writer(eval_set, custom_evaluator_types)
    dataset = [e for spec in eval_set.criteria.metrics if (e := writer.entry(spec, "")) is not None]
    writer.name_entries(dataset, (), (), "")
    if eval_set.name and eval_set.name != eval_set.eval_set_id:
        writer.lost.append(f"the set's name {eval_set.name!r} (the dataset is named by the eval set id)")
    if eval_set.description:
        writer.lost.append("the set's description")
    cases = [writer.case(case, dataset) for case in eval_set.cases]
    document: dict[str, Any] = {"name": eval_set.eval_set_id, "cases": cases}
    if dataset:
        document["evaluators"] = [e.written() for e in dataset]
    notes = []
    if writer.custom_used:
        names = ", ".join(writer.custom_used)
        notes.append(f"Dataset.from_file reads it with custom_evaluator_types=[{names}] (your evaluator classes)")
    return document, writer.lost, notes


def dump_pydantic_evals(document: dict[str, Any], syntax: str) -> str:
    """As `Dataset.to_file` writes: YAML block style in key order with Unicode kept, or JSON indented by 2."""
    if syntax == "json":
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    import yaml

    text: str = yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
    return text
