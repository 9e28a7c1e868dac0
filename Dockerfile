# The evalward GitHub Action image. GitHub's rules for container actions: no USER (the workspace must be
# writable as root), no reliance on WORKDIR (the runner mounts the workspace and makes it the working
# directory), an absolute exec-form ENTRYPOINT.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=0 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN apt-get update \
    && apt-get install -y --no-install-recommends git nodejs \
    && rm -rf /var/lib/apt/lists/*

COPY . /opt/evalward
# Install with the PostgreSQL driver, then byte-compile everything once so each job starts fast.
RUN python -m pip install "/opt/evalward[postgres]" \
    && python -m compileall -q /usr/local/lib/python3.11/site-packages

ENTRYPOINT ["/usr/local/bin/evalward", "ci"]
