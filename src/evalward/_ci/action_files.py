"""The Action's inputs as files: both `action.yml`s' `inputs:`, the composite step's `env:` and the docs table.

All of it is generated from the option families (`_ci.inputs.action_options`), so an option added to a family
is an input of both actions, passed by the composite step and documented, once this is run:

    python -m evalward._ci.action_files --write     # rewrite the checked-in files
    python -m evalward._ci.action_files --check     # exit 1 naming each file that differs (tests run this)

Input defaults: an input whose option has a settings key declares no `default:` (a declared default would be
given on every run and beat `evalward.toml`); its description states the built-in default instead. An input
without a settings key declares its default, so the Actions UI shows it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from evalward._ci.inputs import ACTION_FAMILIES, Families, action_options
from evalward._options.option import SECTIONS, OptionField, value_kind

GITHUB_TOKEN_INPUT = "github-token"
_GITHUB_TOKEN_DESCRIPTION = "Token for comments, statuses and check runs."
_GITHUB_TOKEN_DEFAULT = "${{ github.token }}"
_SECTION_TITLES = {"what runs": "what runs (the options of `evalward run`)"}

ROOT_FILES = ("action.yml", "run/action.yml")
DOCS_PAGE = "docs/action.md"
_TABLE_HEADER = "| input | variable | `evalward.toml` | default | meaning |\n| --- | --- | --- | --- | --- |\n"


def _default_text(item: OptionField) -> str | None:
    """The built-in default as a user writes it, or None when there is none worth stating."""
    default = item.default
    if default is None or default == () or (default is False and item.option.off_flag is None):
        return None
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, float):
        return f"{default:g}"
    if isinstance(default, frozenset):
        return ",".join(sorted(default))
    if isinstance(default, tuple):
        return " ".join(str(part) for part in default)
    return str(default)


def declares_default(item: OptionField) -> bool:
    """Whether the input's `action.yml` entry has a `default:` (module docstring)."""
    return item.toml_key is None and not value_kind(item.field).many and _default_text(item) is not None


def description(item: OptionField) -> str:
    """The input's description: its Action help (or its help), with the built-in default when undeclared."""
    text = (item.option.input_help or item.option.help).rstrip().removesuffix(".")
    default = _default_text(item)
    if default is not None and not declares_default(item) and item.option.default_text is None:
        text += f" (default {default})"
    return text + "."


def _yaml_string(text: str) -> str:
    """A YAML scalar: JSON's double-quoted string is valid YAML and escapes whatever needs it."""
    return json.dumps(text, ensure_ascii=False)


def inputs_block(families: Families = ACTION_FAMILIES) -> str:
    """The `inputs:` entries of both action files, grouped by section, `github-token` last."""
    lines: list[str] = []
    options = list(action_options(families))
    for section in SECTIONS:
        members = [item for item in options if item.option.section == section]
        if not members:
            continue
        lines.append(f"  # --- {_SECTION_TITLES.get(section, section)}")
        for item in members:
            lines.append(f"  {item.input_name}:")
            lines.append(f"    description: {_yaml_string(description(item))}")
            lines.append("    required: false")
            if declares_default(item):
                lines.append(f"    default: {_yaml_string(str(_default_text(item)))}")
    lines += [
        f"  {GITHUB_TOKEN_INPUT}:",
        f"    description: {_yaml_string(_GITHUB_TOKEN_DESCRIPTION)}",
        "    required: false",
        f"    default: {_GITHUB_TOKEN_DEFAULT}",
    ]
    return "\n".join(lines) + "\n"


def input_names(families: Families = ACTION_FAMILIES) -> list[str]:
    """Every input of both action files, in their order."""
    return [str(item.input_name) for item in action_options(families)] + [GITHUB_TOKEN_INPUT]


def composite_env_block(families: Families = ACTION_FAMILIES) -> str:
    """The composite step's `env:` entries: each input passed as `INPUT_<NAME>`, dashes kept (module
    `_ci.inputs`), since composite steps get no `INPUT_*` variables of their own."""
    return "".join(f"        INPUT_{name.upper()}: ${{{{ inputs.{name} }}}}\n" for name in input_names(families))


def docs_rows(families: Families = ACTION_FAMILIES) -> str:
    """The rows of the docs' inputs table, one per input: its variable, its settings key, default and meaning."""
    rows = []
    for item in action_options(families):
        default = item.option.default_text
        if default is None:
            plain = _default_text(item)
            default = f"`{plain}`" if plain is not None else ""
        meaning = (item.option.input_help or item.option.help).rstrip().removesuffix(".")
        # Markdown: a `|` would end the cell and `<slug>` would be taken for an HTML tag.
        meaning = meaning.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
        key = f"`{item.toml_key}`" if item.toml_key else ""
        rows.append(f"| `{item.input_name}` | `{item.option.env}` | {key} | {default} | {meaning} |")
    rows.append(
        f"| `{GITHUB_TOKEN_INPUT}` | (`INPUT_GITHUB-TOKEN`, else `GITHUB_TOKEN`) | | `{_GITHUB_TOKEN_DEFAULT}` | "
        "comments, statuses, check runs |"
    )
    return "\n".join(rows) + "\n"


def _between(text: str, start: str, end: str, replacement: str, *, where: str) -> str:
    """`text` with what lies between the line `start` and the next `end` replaced."""
    begin = text.find(start)
    if begin < 0:
        raise ValueError(f"{where}: {start.strip()!r} not found")
    begin += len(start)
    finish = text.find(end, begin)
    if finish < 0:
        raise ValueError(f"{where}: {end.strip()!r} not found after {start.strip()!r}")
    return text[:begin] + replacement + text[finish:]


def generated(path: str, text: str, families: Families = ACTION_FAMILIES) -> str:
    """`text` (the checked-in file `path`) with its generated parts as the option families say."""
    if path == DOCS_PAGE:
        return _between(text, _TABLE_HEADER, "\n\n", docs_rows(families).rstrip("\n"), where=path)
    text = _between(text, "\ninputs:\n", "\noutputs:", inputs_block(families), where=path)
    if path == "run/action.yml":
        step_env = composite_env_block(families)
        text = _between(text, "      shell: python {0}\n      env:\n", "      run: |", step_env, where=path)
    return text


def stale_files(root: Path, paths: Iterable[str] = (*ROOT_FILES, DOCS_PAGE)) -> list[str]:
    """The files under `root` whose generated parts differ from what the option families generate."""
    return [path for path in paths if generated(path, _read(root / path)) != _read(root / path)]


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def main(argv: Sequence[str] | None = None, root: Path | None = None) -> int:
    """`--write`: regenerate the files in place; `--check` (default): exit 1 listing the stale ones."""
    args = list(sys.argv[1:] if argv is None else argv)
    folder = root or Path.cwd()
    if "--write" in args:
        for path in (*ROOT_FILES, DOCS_PAGE):
            file = folder / path
            file.write_text(generated(path, _read(file)), encoding="utf-8")
        return 0
    stale = stale_files(folder)
    for path in stale:
        print(f"{path}: its inputs differ from the option families; run python -m evalward._ci.action_files --write")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
