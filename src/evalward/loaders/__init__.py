"""Read every supported eval-file format into `evalward.model.EvalSet`.

Formats, detected by content (`detect_format`): ADK's current eval sets (`adk.py`), ADK's two legacy
formats (`adk_legacy.py`), LangSmith examples (`langsmith.py`), langchain-benchmarks tool-usage datasets
(`benchmarks.py`), multi-agent test cases (`multi_agent.py`), pydantic-evals Dataset files
(`pydantic_evals_dataset.py`) and evalward's native YAML/JSON (`native.py`).
`test_config.json` criteria: `test_config.py`. File syntax and positions: `documents.py`, `positions.py`;
problem reporting: `problems.py`; directory search: `discovery.py`; the entry point: `load.py`.
"""

from typing import Any

from evalward.loaders.detect import detect_format
from evalward.loaders.discovery import EVAL_FILE_SUFFIXES
from evalward.loaders.load import ADK_FORMATS, LoadedEvalSets, load_file, load_paths
from evalward.loaders.test_config import (
    ADK_CRITERIA,
    EFFICIENCY_CRITERIA,
    JUDGE_CRITERIA,
    adk_default_criteria,
    load_test_config,
    normalise_match_type,
)


def native_json_schema() -> dict[str, Any]:
    """The JSON Schema of the native eval format (`evalward schema`); `loaders.native`, which builds the native
    format's pydantic models as it is imported, loads only when a native file or its schema is needed."""
    from evalward.loaders.native import (
        native_json_schema as schema,  # start-up: the native format's models build as they are imported
    )

    return schema()


__all__ = [
    "ADK_CRITERIA",
    "ADK_FORMATS",
    "EFFICIENCY_CRITERIA",
    "EVAL_FILE_SUFFIXES",
    "JUDGE_CRITERIA",
    "LoadedEvalSets",
    "adk_default_criteria",
    "detect_format",
    "load_file",
    "load_paths",
    "load_test_config",
    "native_json_schema",
    "normalise_match_type",
]
