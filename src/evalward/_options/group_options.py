"""The `evalward` group's own option that is also an Action input: the settings file.

Defined here, without pydantic, because `evalward --help` builds it and must not import pydantic;
`_options.families.SettingsFileValues` is its field, so the Action's inputs and docs are generated with the rest.
"""

from __future__ import annotations

from evalward._options.option import Option

SETTINGS_FILE = Option(
    flag="--config",
    env="EVALWARD_CONFIG",
    toml=None,
    path="file",
    section="where it runs",
    help="Settings file (default: ./evalward.toml, else [tool.evalward] in ./pyproject.toml)",
    default_text="`./evalward.toml`",
)
