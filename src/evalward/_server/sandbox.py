"""Running repository code apart from the daemon: the launcher, and the bubblewrap sandbox around it.

**The launcher** (`python -I -S …/sandbox.py [--as-mb N] [--cpu-s N] [--die-with-parent PID] -- COMMAND…`)
sets resource limits, then execs the command, which inherits them: RLIMIT_AS (address space, MiB),
RLIMIT_CPU (CPU seconds), RLIMIT_CORE = 0 (no core dumps), and the parent-death signal SIGKILL, so a
worker killed with `kill -9` takes the git or eval process it started with it. It runs instead of
`subprocess`'s `preexec_fn`, which is unsafe in a process with threads (the daemon's workers are threads),
in a fresh interpreter started with `-I -S` (no site-packages, no environment: ~50 ms) — so this file
imports nothing but the standard library at module level.

**The sandbox** (`sandbox = "bwrap"`, the default): `evalward run` runs inside bubblewrap with

- a filesystem of its own: an empty root with, read-only, `/usr` (and the `/bin`, `/lib*` links), a short
  list of `/etc` files (dynamic linker, time zone, name resolution, CA certificates, passwd/group), the
  Python environment (`sys.prefix`, `sys.base_prefix` and every `sys.path` entry of a fresh interpreter)
  and `sandbox_read_paths`; writable, only the job's own folder (the checkout, its output) and a fresh
  `/tmp`; a private `/dev` and `/proc`. The App's key file, the database files, the server file, the
  daemon's home and the work folder of other jobs are not mounted — and should one of them lie inside a
  mounted folder, it is covered (a file by `/dev/null`, which cannot even be opened there; a folder by an
  empty tmpfs);
- new user, PID, IPC, UTS, cgroup and network namespaces: uid 65534 without capabilities, no view of the
  daemon's processes, no network at all unless `sandbox_network` (then the host's network, loopback
  included — reaching a PostgreSQL on 127.0.0.1 as well); with bubblewrap ≥ 0.8 no nested user namespaces
  (`--disable-userns`) and a `/tmp` of at most `job_memory_mb` (`--size`);
- `--die-with-parent` and `--new-session`: killing the launcher's process group ends everything inside.

Whether bubblewrap works here is probed once per process and setting (`probe`; a failure again after
5 minutes), by running a Python in exactly the sandbox a job gets; when it cannot (not installed, user namespaces disabled, a seccomp
profile forbidding `unshare`), `SandboxUnavailable` says why and every job is refused — unless the
operator sets `sandbox = "unsandboxed"`, which runs the code as the daemon's own user with only the
limits, a scrubbed environment and a process group of its own.
"""

from __future__ import annotations

import os
import resource
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalward._server.settings import ServerSettings

_MIB = 1024 * 1024
_PR_SET_PDEATHSIG = 1
SANDBOX_UID = 65534
"""The uid and gid repository code has inside bubblewrap (nobody); files it writes belong to the daemon's user."""

_ETC = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "resolv.conf", "hosts", "host.conf",
    "nsswitch.conf", "gai.conf", "passwd", "group", "protocols", "services", "mime.types", "os-release",
    "ssl/certs", "ssl/openssl.cnf", "ca-certificates", "ca-certificates.conf", "pki/tls/certs", "alternatives",
)  # fmt: skip
"""The `/etc` entries the sandbox shows (each when it exists). Not `/etc/ssl/private`, not `/etc` as a whole."""
_TOP_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


class SandboxUnavailable(Exception):
    """Repository code cannot be run isolated here; the message says why and what the operator can do."""


# -- the launcher ------------------------------------------------------------------------------------------


def launcher_command(
    command: Sequence[str],
    *,
    memory_mb: int | None = None,
    cpu_s: int | None = None,
    die_with_parent: bool = True,
) -> list[str]:
    """The argv that runs `command` under the limits (and dies with this process)."""
    argv = [sys.executable, "-I", "-S", str(Path(__file__).resolve())]
    if memory_mb is not None:
        argv += ["--as-mb", str(memory_mb)]
    if cpu_s is not None:
        argv += ["--cpu-s", str(cpu_s)]
    if die_with_parent:
        argv += ["--die-with-parent", str(os.getpid())]
    return [*argv, "--", *command]


def _die_with(parent: int) -> None:
    """SIGKILL this process when `parent` exits (Linux); exit at once if it already has."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the process group kill still applies
        return
    if os.getppid() != parent:
        sys.exit("sandbox: the worker that started this command has gone")


def main(argv: list[str]) -> None:
    options: dict[str, int] = {}
    rest = list(argv)
    while rest and rest[0] != "--":
        flag = rest.pop(0)
        if flag in ("--as-mb", "--cpu-s", "--die-with-parent") and rest:
            options[flag] = int(rest.pop(0))
        else:
            sys.exit(f"sandbox: unknown argument {flag!r}")
    if len(rest) < 2:
        sys.exit("sandbox: expected -- COMMAND")
    command = rest[1:]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if "--as-mb" in options:
        size = options["--as-mb"] * _MIB
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    if "--cpu-s" in options:
        seconds = options["--cpu-s"]
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 5))
    if "--die-with-parent" in options:
        _die_with(options["--die-with-parent"])
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.exit(f"sandbox: cannot run {command[0]!r}: {exc.strerror}")


# -- the sandbox --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sandbox:
    """How a job's `evalward run` is started: `mode` "bwrap" (with `bwrap`, the executable) or "unsandboxed"."""

    mode: str
    bwrap: str | None = None
    network: bool = False
    read_paths: tuple[str, ...] = ()
    """Folders (and files) shown read-only, besides the system ones."""
    hidden: tuple[str, ...] = ()
    """The daemon's own files and folders, covered wherever a shown folder holds them."""
    tmp_mb: int | None = None
    """Size of the sandbox's /tmp (a tmpfs, so memory; None: the kernel's default, half the RAM)."""
    features: frozenset[str] = frozenset()
    """Options this bubblewrap knows beyond 0.4's (`--disable-userns`, `--size`: 0.8)."""

    def command(self, command: Sequence[str], *, cwd: Path, writable: Sequence[Path]) -> list[str]:
        """`command` as it runs in the sandbox (without the launcher), started in `cwd`."""
        if self.mode != "bwrap":
            return list(command)
        assert self.bwrap is not None
        return [self.bwrap, *self._arguments(cwd=cwd, writable=writable), "--", *command]

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        """The subprocess environment adjusted to the sandbox (its own /tmp)."""
        return {**env, "TMPDIR": "/tmp"} if self.mode == "bwrap" else dict(env)

    def _arguments(self, *, cwd: Path, writable: Sequence[Path]) -> list[str]:
        args = ["--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        args += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
        if "--disable-userns" in self.features:  # no nested user namespaces: less kernel to attack
            args.append("--disable-userns")
        if self.network:
            args.append("--share-net")
        args += ["--dev", "/dev", "--proc", "/proc"]
        if self.tmp_mb is not None and "--size" in self.features:
            args += ["--size", str(self.tmp_mb * _MIB)]
        args += ["--tmpfs", "/tmp"]
        shown = ["/usr"]
        for top in _TOP_LINKS:
            if Path(top).is_symlink():
                args += ["--symlink", str(Path(top).readlink()), top]
            elif Path(top).is_dir():
                shown.append(top)
        shown += [f"/etc/{name}" for name in _ETC if Path(f"/etc/{name}").exists()]
        shown += [p for p in self.read_paths if not _under(p, "/usr")]
        for path in shown:
            args += ["--ro-bind", path, path]
        for covered in _covered(self.hidden, shown):
            args += ["--tmpfs", covered] if Path(covered).is_dir() else ["--ro-bind", "/dev/null", covered]
        for folder in sorted({str(f) for f in writable}, key=len):  # outer folders first
            args += ["--bind", folder, folder]
        args += ["--chdir", str(cwd)]
        return args


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _covered(hidden: Sequence[str], shown: Sequence[str]) -> list[str]:
    """Where, inside the sandbox, each hidden path would be visible through a shown folder (resolved through
    symlinks on both sides): the places to cover."""
    found: list[str] = []
    for secret in hidden:
        real = Path(secret).resolve()
        if not real.exists():
            continue
        for folder in shown:
            base = Path(folder).resolve()
            if real.is_relative_to(base):
                found.append(str(Path(folder) / real.relative_to(base)))
    kept: list[str] = []  # outer first, and nothing inside a folder already covered
    for place in sorted(set(found), key=len):
        if not any(_under(place, k) for k in kept):
            kept.append(place)
    return kept


def _python_paths(executable: str) -> tuple[str, ...]:
    """What a fresh `executable` imports from: its prefixes and its `sys.path` (site-packages, `.pth` entries
    such as an editable install's source folder), as it starts with the eval subprocess's environment."""
    import json
    import subprocess
    import tempfile

    code = "import json, sys; print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path[1:]]))"
    env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL") if k in os.environ}
    with tempfile.TemporaryDirectory() as home:
        done = subprocess.run(
            [executable, "-c", code], cwd=home, env={**env, "HOME": home}, capture_output=True, text=True, timeout=60
        )
    if done.returncode != 0:
        raise SandboxUnavailable(f"could not ask {executable} for its paths: {done.stderr.strip()[-300:]}")
    found: list[str] = [str(Path(executable).resolve().parent)]
    for entry in json.loads(done.stdout):
        if entry and Path(entry).exists():
            found.append(str(Path(entry).absolute()))
    return _outermost(found)


def _outermost(paths: Sequence[str]) -> tuple[str, ...]:
    """`paths` without the ones inside another (and without /usr, shown anyway), shortest first."""
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not _under(path, "/usr") and not any(_under(path, k) for k in kept):
            kept.append(path)
    return tuple(kept)


_PROBED: dict[tuple[object, ...], tuple[str | None, float]] = {}
"""Probe answers (None: it works) and when they were found: a success holds for the process, a failure for
`_REPROBE_S` (the operator may fix the machine without restarting the daemon)."""
_REPROBE_S = 300.0
_PYTHON_PATHS: dict[str, tuple[str, ...]] = {}
_FEATURES: dict[str, frozenset[str]] = {}
_LOCK = threading.Lock()


def resolve(settings: ServerSettings) -> Sandbox:
    """The sandbox jobs run in under `settings`; `SandboxUnavailable` when it is bwrap and bwrap cannot run here."""
    if settings.sandbox == "unsandboxed":
        return Sandbox(mode="unsandboxed")
    import shutil

    bwrap = shutil.which(settings.sandbox_bwrap)
    if bwrap is None:
        raise SandboxUnavailable(
            f"bubblewrap (`{settings.sandbox_bwrap}`) is not installed on the daemon's machine, and evalward does not "
            "run pull-request code without a sandbox. Install it (`apt-get install bubblewrap`), or set "
            '`sandbox = "unsandboxed"` (EVALWARD_SANDBOX=unsandboxed) to run it as the daemon\'s own user.'
        )
    with _LOCK:
        if sys.executable not in _PYTHON_PATHS:
            _PYTHON_PATHS[sys.executable] = _python_paths(sys.executable)
        python = _PYTHON_PATHS[sys.executable]
    read = _outermost([*python, *(str(Path(p).absolute()) for p in settings.sandbox_read_paths)])
    with _LOCK:
        if bwrap not in _FEATURES:
            _FEATURES[bwrap] = _features(bwrap)
        features = _FEATURES[bwrap]
    sandbox = Sandbox(
        mode="bwrap",
        bwrap=bwrap,
        network=settings.sandbox_network,
        read_paths=read,
        hidden=tuple(settings.private_paths()),
        tmp_mb=settings.job_memory_mb,
        features=features,
    )
    key = (sandbox.bwrap, sandbox.network, sandbox.read_paths, sandbox.hidden, sandbox.tmp_mb)
    import time

    with _LOCK:
        known = _PROBED.get(key)
        if known is None or (known[0] is not None and time.monotonic() - known[1] > _REPROBE_S):
            known = _PROBED[key] = (probe(sandbox), time.monotonic())
        problem = known[0]
    if problem is not None:
        raise SandboxUnavailable(
            f"bubblewrap (`{bwrap}`) cannot start a sandbox on the daemon's machine: {problem}. evalward does not run "
            "pull-request code without a sandbox: allow unprivileged user namespaces (or run bubblewrap where it "
            'can create them), or set `sandbox = "unsandboxed"` (EVALWARD_SANDBOX=unsandboxed) to run it as the '
            "daemon's own user."
        )
    return sandbox


def _features(bwrap: str) -> frozenset[str]:
    """The newer options `bwrap --help` lists (older versions refuse options they do not know)."""
    import subprocess

    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(o for o in ("--disable-userns", "--size") if o in done.stdout + done.stderr)


def probe(sandbox: Sandbox) -> str | None:
    """None when a Python starts inside `sandbox` and imports evalward there; else bubblewrap's complaint."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="evalward-probe-") as folder:
        command = sandbox.command(
            [sys.executable, "-c", "import evalward._server"], cwd=Path(folder), writable=[Path(folder)]
        )
        env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL") if k in os.environ}
        try:
            done = subprocess.run(
                command, env={**env, "HOME": folder, "TMPDIR": "/tmp"}, capture_output=True, text=True, timeout=60
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
    if done.returncode == 0:
        return None
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else f"exit code {done.returncode}")[:500]


if __name__ == "__main__":
    main(sys.argv[1:])
