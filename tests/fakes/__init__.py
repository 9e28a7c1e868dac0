"""Fakes that speak evalward's real protocols over real pipes and sockets, for every stage's tests.

- `answers`: the scripted answer every fake agent gives by default (driven by the case's `inputs`);
- `cases`: small builders for eval sets and cases;
- `agents`: in-process Python agents (echo, scripted, slow, hanging, raising, malformed, flaky, traced)
  and `FakeAgent`, an `Agent`-protocol object with a pluggable handler;
- `jsonl_agent`: a subprocess agent speaking the JSON-lines protocol (`jsonl_agent.target(...)`);
- `http_agent`: `FakeHttpAgent`, a real HTTP server on 127.0.0.1 with scripted replies.
"""
