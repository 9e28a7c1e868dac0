"""report/__init__.py: every exported name resolves; importing the package does not import rich."""

from __future__ import annotations

import subprocess
import sys

import evalward.report


def test_exported_members_resolve():
    for name in evalward.report.__all__:
        assert getattr(evalward.report, name) is not None
    from evalward.report.terminal import print_run

    assert evalward.report.print_run is print_run


def test_package_import_does_not_load_rich():
    code = "import sys, evalward.report; print('rich' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
