"""`evalward --help` answers at interpreter speed: the heavy modules load only for the commands that use them."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("evalward.report", "evalward.redact", "evalward.store", "sqlalchemy", "alembic", "openai", "numpy", "rich")


def test_help_imports_none_of_the_heavy_modules() -> None:
    probe = (
        "import sys\n"
        "from evalward.cli.main import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
    )
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert "Usage: evalward" in completed.stdout
    assert completed.stderr.strip().splitlines()[-1] == "[]", completed.stderr[-2000:]
