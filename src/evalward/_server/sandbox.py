"""`python -m evalward._server.sandbox [--as-mb N] [--cpu-s N] -- COMMAND…`: set resource limits, then exec.

The worker runs repository code through this launcher instead of `subprocess`'s `preexec_fn`, because
`preexec_fn` is documented as unsafe in a process with threads (the daemon's workers are threads): the
child could deadlock on a lock held by another thread at fork time. Here the limits are set in a fresh
interpreter with one thread, then `execvp` replaces it with the command, which inherits them:
RLIMIT_AS (address space, MiB), RLIMIT_CPU (CPU seconds), RLIMIT_CORE = 0 (no core dumps).
"""

from __future__ import annotations

import os
import resource
import sys

_MIB = 1024 * 1024


def limited_command(command: list[str], *, memory_mb: int | None, cpu_s: int | None) -> list[str]:
    """The argv that runs `command` under the limits."""
    argv = [sys.executable, "-m", "evalward._server.sandbox"]
    if memory_mb is not None:
        argv += ["--as-mb", str(memory_mb)]
    if cpu_s is not None:
        argv += ["--cpu-s", str(cpu_s)]
    return [*argv, "--", *command]


def main(argv: list[str]) -> None:
    limits: dict[str, int] = {}
    rest = list(argv)
    while rest and rest[0] != "--":
        flag = rest.pop(0)
        if flag in ("--as-mb", "--cpu-s") and rest:
            limits[flag] = int(rest.pop(0))
        else:
            sys.exit(f"sandbox: unknown argument {flag!r}")
    if not rest or len(rest) < 2:
        sys.exit("sandbox: expected -- COMMAND")
    command = rest[1:]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if "--as-mb" in limits:
        size = limits["--as-mb"] * _MIB
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    if "--cpu-s" in limits:
        seconds = limits["--cpu-s"]
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 5))
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
