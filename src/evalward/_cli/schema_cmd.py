"""`evalward schema`: the JSON Schema of the native eval format, for editors and CI checks."""

from __future__ import annotations

import json

import click

from evalward.loaders import native_json_schema


@click.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of evalward's native eval format (YAML or JSON files with `evalward: 1`).

    Point your editor at it (e.g. `# yaml-language-server: $schema=evalward.schema.json`) to get completion.
    """

    click.echo(json.dumps(native_json_schema(), indent=2, sort_keys=True))
