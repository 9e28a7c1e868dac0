"""The Action's `setup` input: shell commands run before the evals, e.g. `pip install -r requirements.txt`.

The agent under test usually imports more than evalward, and the container action's image holds only
evalward and its own dependencies, so the agent's dependencies are installed into the action's environment
first — the same way in the Docker action and the composite one, because both run `evalward ci`.

How it runs: the commands are one bash script (`bash -e -o pipefail`, stopping at the first failing
command), in the working directory, with the action's environment minus evalward's own secrets (the
GitHub and server tokens), and git trusting the checkout (`store.gitinfo.safe_directory_env`). Its output
is folded in the log (`::group::` … `::endgroup::`) and framed by `::stop-commands::` so nothing it
prints runs as a workflow command. A failure is `SetupError` (exit 3, `verdict=error`) naming the failing
command and its line.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from evalward.errors import InfrastructureError
from evalward.store.gitinfo import safe_directory_env

WITHHELD_VARIABLES = ("INPUT_GITHUB-TOKEN", "INPUT_SERVER-TOKEN", "EVALWARD_SERVER_TOKEN")
"""evalward's own secrets: the setup commands do not need them (pass what they need through the step's `env:`)."""
_PRELUDE = 'set -eo pipefail\ntrap \'printf "%s\\n%s\\n" "$LINENO" "$BASH_COMMAND" > "$EVALWARD_SETUP_FAILED"\' ERR\n'
_PRELUDE_LINES = _PRELUDE.count("\n")


class SetupError(InfrastructureError):
    """A setup command failed: the evals could not run in this environment (exit 3)."""


def setup_environment(env: Mapping[str, str], repository: Path | None) -> dict[str, str]:
    """The environment of the setup commands: the action's, minus `WITHHELD_VARIABLES`, plus git's trust of
    the checkout."""

    result = {k: v for k, v in env.items() if k not in WITHHELD_VARIABLES}
    if repository is not None:
        result.update(safe_directory_env(repository, result))
    return result


def run_setup(script: str, *, env: Mapping[str, str], cwd: Path, out: TextIO, repository: Path | None) -> None:
    """Run the setup `script` (module docstring); raise SetupError naming the failing command."""
    bash = shutil.which("bash", path=env.get("PATH") or os.defpath)
    if bash is None:
        raise SetupError("the `setup` commands need bash, which is not on PATH")
    token = secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="evalward-setup-") as folder:
        script_path = Path(folder) / "setup.sh"
        failed_path = Path(folder) / "failed"
        script_path.write_text(_PRELUDE + script.rstrip("\n") + "\n", encoding="utf-8")
        child_env = {**setup_environment(env, repository), "EVALWARD_SETUP_FAILED": str(failed_path)}
        out.write("::group::evalward setup\n")
        out.write(f"::stop-commands::{token}\n")
        out.flush()
        try:
            process = subprocess.Popen(
                [bash, str(script_path)],
                cwd=cwd,
                env=child_env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
            )
        except OSError as exc:
            out.write(f"::{token}::\n::endgroup::\n")
            raise SetupError(f"the `setup` commands could not start: {exc}") from exc
        with process:
            assert process.stdout is not None
            ended = True
            for line in process.stdout:
                out.write(line)
                ended = line.endswith("\n")
            code = process.wait()
        out.write(("" if ended else "\n") + f"::{token}::\n::endgroup::\n")
        out.flush()
        if code != 0:
            raise SetupError(_failure(script, failed_path, code))


def _failure(script: str, failed_path: Path, code: int) -> str:
    """`setup failed at line 2 (`pip install -r requirements.txt`) with exit code 1 …`."""
    try:
        line_text, command = failed_path.read_text(encoding="utf-8").split("\n", 1)
        line = int(line_text) - _PRELUDE_LINES
    except (OSError, ValueError):
        line, command = 0, ""
    lines = script.splitlines()
    where = f"line {line}" if 1 <= line <= len(lines) else "a command"
    what = command.strip() or (lines[line - 1].strip() if 1 <= line <= len(lines) else "")
    shown = f" (`{what[:300]}`)" if what else ""
    return (
        f"the `setup` commands failed at {where}{shown} with exit code {code}, so the evals did not run; "
        "its output is in the log group `evalward setup`"
    )
