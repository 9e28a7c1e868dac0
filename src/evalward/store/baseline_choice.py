"""What a baseline search returns (`store.baseline`): the choice, and every run passed over and why.

Models only, apart from the search and its SQL: the remote history (`remote_history`) reads a server's answer into
them without importing the database layer.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from evalward.model import RunResult


class Refusal(BaseModel):
    """A stored run that was considered as the baseline and passed over, and why."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    run_id: str
    commit: str | None
    reason: str


class BaselineChoice(BaseModel):
    """The chosen baseline, how it was chosen, and what differs from the current run."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    run: RunResult
    how: str = Field(description="E.g. `merge-base 1a2b3c4 on main`, `ancestor 3 commits back …`, `explicit run id`.")
    notes: list[str] = Field(default_factory=list, description="Mismatches and case-set differences to report.")
    refused: list[Refusal] = Field(default_factory=list, description="Candidates passed over on the way.")

    @property
    def commit(self) -> str | None:
        return self.run.context.commit


class BaselineSearch(BaseModel):
    """The outcome of a search: the choice (or None) and everything refused or not found on the way."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    choice: BaselineChoice | None
    refused: list[Refusal] = Field(default_factory=list)
    searched: list[str] = Field(default_factory=list, description="What was looked for, for 'no baseline' reports.")
