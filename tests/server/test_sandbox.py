"""Issue #31 row 8: pull-request code runs isolated from the daemon.

Through the daemon on real sockets, a pull request whose agent tries to read the App's private key file and
the SQLite history, to reach the host's network and to write outside its checkout: under bubblewrap (the
default) it gets none of them. Without a sandbox the job is refused, saying why — unless the operator sets
`sandbox = "unsandboxed"`, where the same agent reads them all (which is what that setting accepts).

bubblewrap must be installed and able to create user namespaces; the tests skip otherwise, unless
EVALWARD_REQUIRE_SANDBOX=1 (`.ci/run` sets it once bubblewrap works), where they fail.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from tests.server.chaos import agent_answer, bwrap_problem, probe_repo, wait_until
from tests.server.conftest import make_settings
from tests.server.daemon import REPO, Daemon, pr_event, start_daemon

from evalward._server import sandbox as sandboxes


@pytest.fixture(scope="module")
def bwrap() -> None:
    problem = bwrap_problem()
    if problem is not None:
        if os.environ.get("EVALWARD_REQUIRE_SANDBOX"):
            pytest.fail(f"EVALWARD_REQUIRE_SANDBOX is set but {problem}")
        pytest.skip(problem)


def run_probe(daemon: Daemon, tmp_path: Path, key: Path) -> dict[str, str]:
    """The probe repository's pull request, run to its end: what its agent could do."""
    port = int(daemon.github.url.rsplit(":", 1)[1].split("/")[0])
    reads = {"key": key, "database": tmp_path / "server.db"}
    _, head = probe_repo(tmp_path, REPO, reads, port=port, outside=tmp_path / "escaped.txt")
    daemon.github.permissions[(REPO, "dev")] = "write"
    job_id = daemon.deliver("pull_request", pr_event(21, head, "dev"))["jobs"][0]["id"]
    job = daemon.wait(job_id, ("done", "failed"))
    assert job.status == "done", job.last_error
    assert daemon.store is not None
    return agent_answer(daemon.store.load_run(str(job.run_id)))


@pytest.mark.usefixtures("bwrap")
def test_under_bubblewrap_pr_code_cannot_read_the_key_or_the_database(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    key = tmp_path / "secrets" / "app.pem"
    clone = f"file://{tmp_path}/git/{{repo}}.git"
    with start_daemon(
        tmp_path, caplog, key_file=key, clone_url_template=clone, job_timeout_s=60, sandbox="bwrap"
    ) as daemon:
        answer = run_probe(daemon, tmp_path, key)
    assert key.is_file() and (tmp_path / "server.db").is_file()  # they exist; the agent just cannot see them
    assert answer == {
        "key": "denied:FileNotFoundError",
        "database": "denied:FileNotFoundError",
        "network": "denied:ConnectionRefusedError",  # a network namespace of its own: nothing listens there
        "outside": "read:7",  # written into the sandbox's own /tmp, a tmpfs that is gone with it ...
    }
    assert not (tmp_path / "escaped.txt").exists()  # ... not into the daemon's
    assert "repository code runs in bubblewrap" in caplog.text
    [check] = daemon.github.check_runs.values()
    assert check["status"] == "completed"


def test_without_a_sandbox_the_job_is_refused_with_a_clear_message(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = str(tmp_path / "no-such-bwrap")
    with start_daemon(tmp_path, caplog, sandbox="bwrap", sandbox_bwrap=missing) as daemon:
        daemon.github.permissions[(REPO, "dev")] = "write"
        job_id = daemon.deliver("pull_request", pr_event(22, "2" * 40, "dev"))["jobs"][0]["id"]
        job = daemon.wait(job_id, ("failed",))
        check = wait_until(lambda: [c for c in daemon.github.check_runs.values() if c["status"] == "completed"])
    message = (
        f"bubblewrap (`{missing}`) is not installed on the daemon's machine, and evalward does not run "
        "pull-request code without a sandbox. Install it (`apt-get install bubblewrap`), or set "
        '`sandbox = "unsandboxed"` (EVALWARD_SANDBOX=unsandboxed) to run it as the daemon\'s own user.'
    )
    assert job.last_error == message and job.attempts == 1  # refused, not retried
    [completed] = check
    assert (completed["conclusion"], completed["output"]["title"], completed["output"]["summary"]) == (
        "failure",
        "The evals did not run",
        message,
    )
    assert not list((tmp_path / "jobs").glob("job-*"))  # nothing was cloned
    assert "every job that runs repository code will be refused" in caplog.text


def test_unsandboxed_pr_code_reads_what_the_daemon_reads(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """What `sandbox = "unsandboxed"` means, shown: the same agent reads the key and the database."""
    key = tmp_path / "secrets" / "app.pem"
    clone = f"file://{tmp_path}/git/{{repo}}.git"
    with start_daemon(
        tmp_path, caplog, key_file=key, clone_url_template=clone, job_timeout_s=60, sandbox="unsandboxed"
    ) as daemon:
        answer = run_probe(daemon, tmp_path, key)
    assert answer["key"] == f"read:{key.stat().st_size}" and answer["database"].startswith("read:")
    assert answer["network"] == "read:connected" and answer["outside"] == "read:7"
    assert "repository code runs UNSANDBOXED" in caplog.text


@pytest.mark.usefixtures("bwrap")
def test_a_secret_inside_a_folder_the_sandbox_shows_is_covered(tmp_path: Path) -> None:
    """Belt and braces: a key file kept inside a folder the sandbox mounts (here an extra read-only path) is
    covered with /dev/null, a database folder with an empty tmpfs; the folder's other files stay readable."""
    shown = tmp_path / "tools"
    (shown / "state").mkdir(parents=True)
    (shown / "tool.txt").write_text("a tool")
    (shown / "app.pem").write_text("secret key")
    (shown / "state" / "history.db").write_text("secret rows")
    settings = make_settings(
        f"sqlite:///{shown / 'state' / 'history.db'}",
        github_private_key_file=str(shown / "app.pem"),
        sandbox_read_paths=str(shown),  # as EVALWARD_SANDBOX_READ_PATHS gives it
        work_dir=str(shown / "state"),
    )
    sandbox = sandboxes.resolve(settings)
    job = tmp_path / "job"
    job.mkdir()
    script = f"cat {shown}/tool.txt; echo; cat {shown}/app.pem 2>/dev/null | wc -c; ls -A {shown}/state | wc -l"
    command = sandbox.command(["/bin/sh", "-c", script], cwd=job, writable=[job])
    done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    assert done.stdout.split() == ["a", "tool", "0", "0"], done.stderr
