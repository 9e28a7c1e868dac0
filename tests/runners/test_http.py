"""The HTTP runner against a real server on 127.0.0.1 (tests/fakes/http_agent.py)."""

from __future__ import annotations

import socket

import pytest
from tests.fakes.cases import make_case, make_set
from tests.fakes.http_agent import FakeHttpAgent, Reply

from evalward.errors import UsageError
from evalward.model import AgentOutput, AgentRequest
from evalward.redact import url_without_credentials
from evalward.runners import make_agent
from evalward.runners.agent_contract import AgentFailure
from evalward.runners.executor import ExecutorOptions, execute, plan_work
from evalward.runners.http import HttpAgent


def request(query: str = "hi", **inputs: object) -> AgentRequest:
    return AgentRequest(case_id="c1", turn=0, query=query, inputs=dict(inputs), session_id="s-1")


async def run(url: str, req: AgentRequest) -> AgentOutput:
    agent = make_agent(url)
    await agent.start()
    try:
        return await agent.run_turn(req)
    finally:
        await agent.aclose()


async def failure(url: str, req: AgentRequest) -> AgentFailure:
    with pytest.raises(AgentFailure) as caught:
        await run(url, req)
    return caught.value


async def test_the_request_is_posted_as_json_and_the_output_read_back(http_agent: FakeHttpAgent) -> None:
    req = request("hello", tool_calls=[{"name": "search", "args": {"q": "x"}}])
    output = await run(http_agent.url, req)
    assert output.response == "echo: hello"
    assert [c.name for c in output.tool_calls] == ["search"]
    assert http_agent.requests == [req.model_dump(mode="json")]
    assert http_agent.paths == ["/agent"]


async def test_503_is_retried_by_the_executor_until_it_succeeds(http_agent: FakeHttpAgent) -> None:
    agent = make_agent(http_agent.url)
    await agent.start()
    case = make_case("c", inputs={"fail_times": 2})
    summary = await execute(plan_work([make_set(case)], 1), agent, ExecutorOptions(retry_backoff_s=0))
    run_ = summary.completed[0]
    assert run_.error is None
    assert run_.attempts == 3  # 503, 503, 200
    assert len(http_agent.requests) == 3


async def test_503_retries_run_out_as_a_crash(http_agent: FakeHttpAgent) -> None:
    agent = make_agent(http_agent.url)
    await agent.start()
    case = make_case("c", inputs={"fail_times": 10})
    summary = await execute(plan_work([make_set(case)], 1), agent, ExecutorOptions(max_retries=1, retry_backoff_s=0))
    error = summary.completed[0].error
    assert error is not None
    assert (error.kind, error.attempts) == ("crash", 2)
    assert "answered HTTP 503 Service Unavailable" in error.message


async def test_429_is_a_retryable_agent_error_with_the_retry_after_hint(http_agent: FakeHttpAgent) -> None:
    http_agent.queue(Reply(429, "slow down", {"Retry-After": "7"}))
    error = await failure(http_agent.url, request())
    assert (error.kind, error.retryable, error.retry_after_s) == ("agent_error", True, 7.0)
    assert error.message == f'the agent at {http_agent.url} answered HTTP 429 Too Many Requests: "slow down"'


async def test_other_statuses_are_not_retried_and_quote_the_body(http_agent: FakeHttpAgent) -> None:
    error = await failure(http_agent.url, request(http_status=500, http_body={"detail": "KeyError 'city'"}))
    assert (error.kind, error.retryable) == ("agent_error", False)
    assert error.message == (
        f'the agent at {http_agent.url} answered HTTP 500 Internal Server Error: "{{\\"detail\\": \\"KeyError \'city\'\\"}}"'
    )


async def test_a_body_that_is_not_json_is_malformed_output(http_agent: FakeHttpAgent) -> None:
    error = await failure(http_agent.url, request(garbage=True))
    assert error.kind == "malformed_output"
    assert error.message == (
        f'the agent at {http_agent.url} answered HTTP 200 with a body that is not JSON: "<html>definitely not json</html>"'
    )


async def test_json_of_the_wrong_shape_names_the_field(http_agent: FakeHttpAgent) -> None:
    http_agent.queue(Reply(200, {"response": "ok", "usage": {"input_tokens": "many"}}))
    error = await failure(http_agent.url, request())
    assert error.kind == "malformed_output"
    assert error.message.startswith("malformed agent output: usage.input_tokens: Input should be a valid integer")
    assert error.message.endswith('(found "many")')


async def test_an_output_with_error_is_an_agent_error(http_agent: FakeHttpAgent) -> None:
    error = await failure(http_agent.url, request(output={"error": "tool backend down", "retryable": True}))
    assert (error.kind, error.retryable) == ("agent_error", True)


async def test_a_refused_connection_is_a_retryable_crash() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # The port was free a moment ago and nothing listens on it now.
    error = await failure(f"http://127.0.0.1:{port}/agent", request())
    assert (error.kind, error.retryable) == ("crash", True)
    assert error.message.startswith(f"could not reach the agent at http://127.0.0.1:{port}/agent: ConnectError")


async def test_url_credentials_are_sent_but_not_shown(http_agent: FakeHttpAgent) -> None:
    url = http_agent.url.replace("http://", "http://bot:s3cret@") + "?api_key=abc&mode=fast"
    agent = make_agent(url)
    assert agent.target.target == http_agent.url + "?api_key=[redacted credential]&mode=fast"
    await agent.start()
    await agent.run_turn(request())
    await agent.aclose()
    assert http_agent.headers[0]["Authorization"] == "Basic Ym90OnMzY3JldA=="  # base64("bot:s3cret")
    assert http_agent.paths == ["/agent?api_key=abc&mode=fast"]


def test_url_without_credentials_strips_userinfo_and_secret_parameters() -> None:
    assert url_without_credentials("https://u:p@host:8443/run?token=t&x=1&Secret_Key=k#frag") == (
        "https://host:8443/run?token=[redacted credential]&x=1&Secret_Key=[redacted credential]#frag"
    )
    assert url_without_credentials("http://host/agent") == "http://host/agent"


def test_a_url_without_host_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="expected an http"):
        HttpAgent("http:///agent")
