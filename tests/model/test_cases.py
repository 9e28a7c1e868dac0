"""`evalward.model.cases`: the sequence contract and the helpers that take a list or a `CaseSequence`."""

from __future__ import annotations

import copy
from collections.abc import Sequence

import pytest
from tests.fakes.cases import make_case

from evalward.model import CaseEdit, CaseSequence, EvalCase, EvalSet, SessionInput, SourceLocation
from evalward.model import cases as case_facts


class Listed(CaseSequence):
    """A `CaseSequence` over a list, counting reads: the contract without a file."""

    def __init__(self, cases: Sequence[EvalCase], edits: tuple[CaseEdit, ...] = ()) -> None:
        self._cases = list(cases)
        self._edits = edits
        self.reads = 0

    def __len__(self) -> int:
        return len(self._cases)

    def case_at(self, index: int) -> EvalCase:
        self.reads += 1
        case = self._cases[index].model_copy(deep=True)
        for edit in self._edits:
            edit(case)
        return case

    def ids(self) -> Sequence[str]:
        return [c.case_id for c in self._cases]

    def position(self, case_id: str) -> int | None:
        return next((i for i, c in enumerate(self._cases) if c.case_id == case_id), None)

    def content_hash_at(self, index: int) -> str:
        return self.case_at(index).content_hash

    def input_hash_at(self, index: int) -> str:
        return self.case_at(index).input_hash

    def source_at(self, index: int) -> SourceLocation | None:
        return self._cases[index].source

    def turn_count_at(self, index: int) -> int:
        return len(self._cases[index].turns)

    def select(self, indexes: Sequence[int]) -> Listed:
        return Listed([self._cases[i] for i in indexes], self._edits)

    def edited(self, edit: CaseEdit) -> Listed:
        return Listed(self._cases, (*self._edits, edit))


def three() -> list[EvalCase]:
    cases = [make_case("a", "hi"), make_case("b", "one", "two"), make_case("c", "bye")]
    for line, case in enumerate(cases, start=1):
        case.source = SourceLocation(path="f.json", line=line, column=3, json_path=f"$[{line - 1}]")
    return cases


def test_indexing_counts_from_either_end_and_stops_at_both() -> None:
    cases = Listed(three())
    assert [cases[0].case_id, cases[-1].case_id, cases[-3].case_id] == ["a", "c", "a"]
    with pytest.raises(IndexError):
        cases[3]
    with pytest.raises(IndexError):
        cases[-4]


def test_a_slice_is_a_sequence_of_those_cases() -> None:
    cases = Listed(three())
    tail = cases[1:]
    assert isinstance(tail, CaseSequence)
    assert [c.case_id for c in tail] == ["b", "c"]
    assert [c.case_id for c in cases[::-1]] == ["c", "b", "a"]


def test_equal_to_the_list_it_stands_for_in_either_order() -> None:
    cases = Listed(three())
    assert cases == three()
    assert three() == cases
    assert cases != three()[:2]
    assert cases != "abc"
    assert repr(cases) == "<Listed of 3 cases>"


def test_an_eval_set_keeps_a_sequence_as_given_and_dumps_it_as_a_list() -> None:
    listed = Listed(three())
    eval_set = EvalSet(eval_set_id="s", format="native", cases=listed)
    plain = EvalSet(eval_set_id="s", format="native", cases=three())
    assert eval_set.cases is listed
    assert eval_set.model_dump() == plain.model_dump()
    assert eval_set == plain
    assert eval_set.content_hash == plain.content_hash


def test_an_eval_set_still_keeps_a_list_as_a_list() -> None:
    eval_set = EvalSet(eval_set_id="s", format="native", cases=three())
    assert isinstance(eval_set.cases, list)


def test_per_case_facts_agree_between_the_two_forms() -> None:
    listed, plain = Listed(three()), three()
    assert case_facts.case_ids(listed) == case_facts.case_ids(plain) == ["a", "b", "c"]
    assert dict(case_facts.content_hashes(listed)) == dict(case_facts.content_hashes(plain))
    assert dict(case_facts.input_hashes(listed)) == dict(case_facts.input_hashes(plain))
    assert case_facts.case_sources(listed) == case_facts.case_sources(plain)
    assert case_facts.content_hash_list(listed) == case_facts.content_hash_list(plain)
    assert case_facts.turn_count(listed) == case_facts.turn_count(plain) == 4
    assert [case_facts.case_source(listed, i) for i in range(3)] == [case_facts.case_source(plain, i) for i in range(3)]


def test_a_fact_view_is_a_mapping_by_case_id() -> None:
    listed = Listed(three())
    hashes = case_facts.content_hashes(listed)
    assert list(hashes) == ["a", "b", "c"]
    assert len(hashes) == 3
    assert hashes["b"] == three()[1].content_hash
    assert "z" not in hashes
    with pytest.raises(KeyError):
        hashes["z"]
    # In order by position: what pydantic copies a mapping through.
    assert [k for k, _ in hashes.items()] == ["a", "b", "c"]


def test_a_source_view_reads_as_the_source_dumped() -> None:
    listed = Listed(three())
    [(case_id, source)] = list(case_facts.case_sources(listed).items())[:1]
    expected = three()[0].source
    assert expected is not None
    assert (case_id, dict(source)) == ("a", expected.model_dump(mode="json"))
    assert source["line"] == 1
    assert list(source) == ["path", "line", "column", "json_path"]


def test_keep_ids_selects_in_order_from_either_form() -> None:
    wanted = {"c", "a"}.__contains__
    listed = case_facts.keep_ids(Listed(three()), wanted)
    plain = case_facts.keep_ids(three(), wanted)
    assert isinstance(listed, CaseSequence)
    assert isinstance(plain, list)
    assert [c.case_id for c in listed] == [c.case_id for c in plain] == ["a", "c"]


def test_edit_cases_changes_a_list_in_place_and_records_on_a_sequence() -> None:
    def give_state(case: EvalCase) -> None:
        case.session_input = SessionInput(state={"k": 1})

    plain = three()
    assert case_facts.edit_cases(plain, give_state) is plain
    assert all(c.session_input == SessionInput(state={"k": 1}) for c in plain)

    listed = Listed(three())
    edited = case_facts.edit_cases(listed, give_state)
    assert edited is not listed
    assert all(c.session_input is None for c in listed)  # the original is unchanged
    assert [c.session_input for c in edited] == [SessionInput(state={"k": 1})] * 3
    assert dict(case_facts.content_hashes(edited)) == {c.case_id: c.content_hash for c in plain}


def test_a_deep_copy_of_a_set_with_a_sequence_is_equal() -> None:
    eval_set = EvalSet(eval_set_id="s", format="native", cases=Listed(three()))
    assert copy.deepcopy(eval_set) == eval_set
    assert eval_set.model_copy(deep=True) == eval_set
