# The evalward GitHub Action image. GitHub's rules for container actions: no USER (the workspace must be
# writable as root), no reliance on WORKDIR (the runner mounts the workspace and makes it the working
# directory), an absolute exec-form ENTRYPOINT (no /bin/sh in between: Debian's sh drops the INPUT_* variables
# whose names contain dashes, e.g. INPUT_EVAL-PATHS).
#
# The checkout belongs to the runner's user (uid 1001) while this container runs as root; `evalward ci`
# makes git trust it (store/gitinfo.py), so merge-base lookups and the `setup` commands' git calls work.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=0 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    UV_SYSTEM_PYTHON=1 \
    UV_LINK_MODE=copy

RUN apt-get update \
    && apt-get install -y --no-install-recommends git nodejs \
    && rm -rf /var/lib/apt/lists/*

COPY . /opt/evalward
# evalward, its PostgreSQL driver and uv, each dependency at the version pinned in constraints/action.txt (so
# every build of one version installs the same packages), then byte-compiled once so each job starts fast.
# The `setup` input installs the agent's own dependencies into this same Python: `pip install -r …` works, and
# `uv pip install -r …` (UV_SYSTEM_PYTHON=1 targets this Python) is several times faster.
RUN python -m pip install --constraint /opt/evalward/constraints/action.txt "/opt/evalward[action]" \
    && python -m compileall -q /usr/local/lib/python3.11/site-packages

ENTRYPOINT ["/usr/local/bin/evalward", "ci"]
