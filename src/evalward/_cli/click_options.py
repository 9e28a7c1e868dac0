"""Click options made from the option families (`evalward._options`): no option is declared here.

`options_from(Model)` turns every option field of a family into a click option (or the PATHS argument) whose
Python name is the field's, so a command turns its keyword arguments back into the family with
`Model.model_validate` / `RunValues.from_values`. The flag, variable, type, default, choices, range, metavar
and help all come from the field and its `Option`; the Action's inputs and the settings file are generated from
the same fields (`_ci.action_files`, `config`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel

from evalward._cli.click_builder import F, apply_in_order, click_parameter
from evalward._options.families import RecordingValues, ReportFileValues
from evalward._options.option import option_fields


def options_from(
    *models: type[BaseModel], only: Sequence[str] | None = None, required: Sequence[str] = ()
) -> Callable[[F], F]:
    """Every option of `models` with a flag (or the named ones, in that order) as click parameters, in declaration order;
    those named in `required` must be given (`evalward run --agent`; `evalward ci` checks its agent itself, to
    name the Action input)."""
    fields = list(option_fields(*models))
    if only is not None:
        by_name = {found.name: found for found in fields}
        fields = [by_name[name] for name in only]

    def decorate(func: F) -> F:
        parameters = [
            click_parameter(found, required=found.name in required) for found in fields if found.option.flag is not None
        ]
        return apply_in_order(func, parameters)

    return decorate


report_file_options = options_from(ReportFileValues)
"""--json, --junit and --markdown: the report files."""
db_option = options_from(RecordingValues, only=("db_url",))
"""--db (EVALWARD_DB): the history database."""
