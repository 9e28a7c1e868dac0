"""`evalward convert`: write eval files in another format, listing what the target cannot express."""

from __future__ import annotations

from pathlib import Path

import click

from evalward._cli.click_options import options_from
from evalward._options.run_values import RunValues
from evalward.config import LoadedConfig
from evalward.convert import TargetFormat, convert_file
from evalward.convert.native_writer import NativeSyntax
from evalward.errors import UsageError


@click.command("convert")
@click.argument("source", type=click.Path(exists=True))
@click.option(
    "--to",
    "target",
    type=click.Choice(["adk", "native", "pydantic-evals"]),
    required=True,
    help="adk: ADK's current eval-set JSON (+ test_config.json); native: evalward's YAML/JSON format; "
    "pydantic-evals: a Dataset file (YAML/JSON) that pydantic_evals.Dataset.from_file reads",
)
@click.option(
    "--out",
    type=click.Path(),
    help="Output file (one eval set) or directory (several); default: print to stdout",
)
@click.option(
    "--syntax",
    type=click.Choice(["yaml", "json"]),
    default=None,
    help="Native and pydantic-evals syntax (default: from --out's suffix, else yaml)",
)
@options_from(RunValues, only=("test_config",))
@click.option("--strict", is_flag=True, help="Exit 1 when anything could not be expressed in the target format")
def convert_command(
    source: str, target: str, out: str | None, syntax: str | None, test_config: str | None, strict: bool
) -> None:
    """Convert the eval files in SOURCE (a file or directory, any format evalward reads) to --to.

    Legacy ADK files become current ADK eval sets; LangSmith, langchain-benchmarks and multi-agent files
    become native files; native files become ADK eval sets where ADK can express them; any file becomes a
    pydantic-evals Dataset whose evaluators are its evaluator criteria (your classes among them are those
    of the settings' custom_evaluator_types). Everything the target cannot express is listed on stderr
    ("not expressible: …"). With --to adk, the set's ADK criteria are written as test_config.json beside
    --out. Exit 0, or 1 with --strict when something was lost.
    """

    chosen: NativeSyntax = (
        "json" if (syntax or ("json" if out and out.endswith(".json") else "yaml")) == "json" else "yaml"
    )
    settings = click.get_current_context().find_root().obj
    custom_types = list(settings.settings.run.custom_evaluator_types) if isinstance(settings, LoadedConfig) else []
    to: TargetFormat = "adk" if target == "adk" else "native" if target == "native" else "pydantic_evals"
    conversions = convert_file(source, to, syntax=chosen, config_path=test_config, custom_evaluator_types=custom_types)
    lost = 0
    out_path = Path(out) if out else None
    if out_path is not None and len(conversions) > 1 and out_path.suffix:
        raise UsageError(f"{source} holds {len(conversions)} eval sets: give --out a directory, not a file name")
    for conversion in conversions:
        for line in conversion.unexpressed:
            click.echo(f"not expressible in {target} ({conversion.eval_set_id}): {line}", err=True)
        for line in conversion.notes:
            click.echo(f"note ({conversion.eval_set_id}): {line}", err=True)
        lost += len(conversion.unexpressed)
        if out_path is None:
            click.echo(conversion.text, nl=False)
            if conversion.test_config is not None:
                click.echo("note: the ADK criteria (test_config.json) are written only with --out", err=True)
            continue
        file = out_path
        if len(conversions) > 1 or not out_path.suffix:
            suffix = ".evalset.json" if target == "adk" else (".eval.json" if chosen == "json" else ".eval.yaml")
            file = out_path / f"{conversion.eval_set_id}{suffix}"
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(conversion.text, encoding="utf-8")
        click.echo(f"wrote {file}", err=True)
        if conversion.test_config is not None:
            config = file.parent / "test_config.json"
            if config.exists() and config.read_text(encoding="utf-8") != conversion.test_config:
                click.echo(f"note: {config} exists and differs; ADK criteria not written over it", err=True)
            else:
                config.write_text(conversion.test_config, encoding="utf-8")
                click.echo(f"wrote {config}", err=True)
    if lost:
        click.echo(f"{lost} item(s) could not be expressed in {target} (listed above)", err=True)
        if strict:
            raise SystemExit(1)
