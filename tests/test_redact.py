"""The redactor: which values count as secrets, which shapes are caught, and that prose survives."""

from __future__ import annotations

from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from evalward import redact
from evalward.redact import (
    Redactor,
    Secret,
    is_secret_name,
    marker,
    mask_command,
    mask_command_text,
    mask_url,
    secrets_from_environment,
)

GITHUB_TOKEN = "ghs_" + "A1b2C3d4E5" * 4
OPENAI_KEY = "sk-proj-" + "Zz9Yy8Xx7W" * 5


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("GITHUB_TOKEN", True),
        ("INPUT_GITHUB-TOKEN", True),
        ("OPENAI_API_KEY", True),
        ("DB_PASSWORD", True),
        ("WEBHOOK_SECRET", True),
        ("AWS_CREDENTIALS", True),
        ("HOME", False),
        ("KEYBOARD", False),
        ("TOKENIZER", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_environment_values_are_replaced_by_a_marker_naming_the_variable() -> None:
    environ = {"GITHUB_TOKEN": "plain-value-123", "SHORT_KEY": "1", "FLAG_SECRET": "true", "HOME": "/root"}
    redactor = Redactor(secrets_from_environment(environ))
    assert redactor.text("token plain-value-123 home /root") == f"token {marker('GITHUB_TOKEN')} home /root"
    # Values too short or too plain to be secrets are left alone: masking them would shred every report.
    assert redactor.text("1 true") == "1 true"


def test_passwords_inside_url_values_are_secrets_too() -> None:
    environ = {"EVALWARD_DB": "postgresql+psycopg://app:s3cr3t-pw@db/evals?password=other-pw-9"}
    found = {s.value for s in secrets_from_environment(environ)}
    assert {"s3cr3t-pw", "other-pw-9"} <= found


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (GITHUB_TOKEN, "GitHub token"),
        ("ghp_" + "x" * 36, "GitHub token"),
        ("github_pat_" + "11ABCDEFG0" + "_" + "a1" * 20, "GitHub token"),
        (OPENAI_KEY, "API key"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTYifQ.c2lnbmF0dXJlLXZhbHVl", "JWT"),
        ("AKIAABCDEFGHIJKLMNOP", "AWS access key id"),
        ("xoxb-1234567890-abcdefghij", "Slack token"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "PEM private key"),
    ],
)
def test_token_shapes_are_caught_without_knowing_the_value(text: str, kind: str) -> None:
    assert Redactor().text(f"leaked: {text}.") == f"leaked: {marker(kind)}."


def test_credentials_keep_their_context_and_prose_survives() -> None:
    redactor = Redactor()
    assert redactor.text("Authorization: Bearer abc123def456ghi") == f"Authorization: Bearer {marker('credential')}"
    assert redactor.text("https://x-access-token:tok3n-value@github.com/o/r") == (
        f"https://x-access-token:{marker('password')}@github.com/o/r"
    )
    assert redactor.text("GET /a?api_key=v4lue&x=1") == f"GET /a?api_key={marker('credential')}&x=1"
    assert redactor.text("OPENAI_API_KEY=abcdefgh123") == f"OPENAI_API_KEY={marker('OPENAI_API_KEY')}"
    prose = "The bearer instrument risk-assessment-framework-for-agents uses a token budget of 4096."
    assert redactor.text(prose) == prose


def test_text_without_any_trigger_literal_is_still_checked_for_a_bearer_credential() -> None:
    # No `=`, `://` or token-shape literal: only the lower-cased `bearer` check can find this one.
    assert Redactor().text("sent with BEARER abcdefghij12345") == f"sent with BEARER {marker('credential')}"


def test_models_are_redacted_wherever_the_secret_sits_and_whatever_it_holds() -> None:
    # in values and keys, with non-ASCII neighbours and characters JSON would escape
    class Reply(BaseModel):
        text: str
        state: dict[str, list[str]]

    for value in ("päss-wörd-ü1", 'quote"in-it', "back\\slash-1", "tab\there-1"):
        redactor = Redactor([Secret(value, "DB_PASSWORD")])
        reply = Reply(text=f"é {value}", state={value: ["x"], "k": [f"«{value}»"]})
        hidden = marker("DB_PASSWORD")
        assert redactor.model(reply) == Reply(text=f"é {hidden}", state={hidden: ["x"], "k": [f"«{hidden}»"]})
    shaped = Reply(text="ok", state={"k": ["see https://u:pw-1234@host/x", "a?api_key=v4lue"]})
    assert Redactor().model(shaped).state["k"] == [
        f"see https://u:{marker('password')}@host/x",
        f"a?api_key={marker('credential')}",
    ]
    clean = Reply(text="P=4/4=1.000, order_id=7; Where is it?", state={"risk": ["none"]})
    assert Redactor().model(clean) is clean


def test_the_longest_secret_wins_and_multi_line_secrets_are_masked_line_by_line() -> None:
    key = "-----BEGIN-ish\nline-one-value\nline-two-value"
    redactor = Redactor([Secret("abcdefgh", "SHORT_KEY"), Secret("abcdefgh-longer", "LONG_KEY"), Secret(key, "PEM")])
    assert redactor.text("abcdefgh-longer abcdefgh") == f"{marker('LONG_KEY')} {marker('SHORT_KEY')}"
    assert redactor.text("wrapped: line-two-value") == f"wrapped: {marker('PEM')}"


def test_data_and_models_come_back_unchanged_when_clean() -> None:
    class Answer(BaseModel):
        text: str
        parts: list[str]

    redactor = Redactor([Secret("hunter2hunter2", "PASSWORD")])
    data = {"a": ["x", {"b": "y"}]}
    assert redactor.data(data) is data
    assert redactor.data({"k": (1, 2.5, None, True)}) == {"k": (1, 2.5, None, True)}
    proxy = MappingProxyType({"hunter2hunter2": ["hunter2hunter2"]})
    assert redactor.data(proxy) == {marker("PASSWORD"): [marker("PASSWORD")]}
    clean = Answer(text="fine", parts=["ok"])
    assert redactor.model(clean) is clean
    dirty = Answer(text="pw hunter2hunter2", parts=["hunter2hunter2"])
    assert redactor.model(dirty) == Answer(text=f"pw {marker('PASSWORD')}", parts=[marker("PASSWORD")])


def test_urls_and_command_lines_are_shown_masked() -> None:
    assert mask_url("postgresql://app:pw-value@db:5432/x?password=p2&sslmode=require") == (
        "postgresql://app:[redacted password]@db:5432/x?password=[redacted credential]&sslmode=require"
    )
    assert mask_url("https://tok3n@example.com/agent") == "https://[redacted credential]@example.com/agent"
    assert mask_command(["python", "agent.py", "--api-key", "abc", "--token=xyz", "--model", "m"]) == [
        "python",
        "agent.py",
        "--api-key",
        marker("credential"),
        f"--token={marker('credential')}",
        "--model",
        "m",
    ]
    assert mask_command_text("cmd:python agent.py --model m") == "cmd:python agent.py --model m"
    assert "sekrit" not in mask_command_text("cmd:python agent.py --password sekrit")


# Pieces that make up hostile strings: secret values, token shapes, credential syntax, and every character JSON
# escapes, so a secret can sit right after an escape sequence (`\nMY_TOKEN=…`, `\tghp_…`).
_PIECES = [
    "hunter2hunter2",
    'quo"te-secret',
    "back\\slash-secret",
    GITHUB_TOKEN,
    OPENAI_KEY,
    "AKIA" + "ABCDEFGHIJKLMNOP",
    "eyJhbGciOi.eyJzdWIiOi.c2ln",
    "Bearer abcdefghij12345",
    "authorization: token abcdefghijkl12",
    "MY_TOKEN=abcdefgh1",
    "https://user:pw-1234@host/x",
    "?api_key=v4lue",
    "&Signature=",
    "?",
    "&",
    "KEY=",
    "A_PASSWD=",
    "xoxb-1234567890-abc",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
    "\n",
    "\t",
    "\x01",
    "\x1f",
    '"',
    "\\",
    " ",
    "é",
    "=",
    "://",
    "@",
    "word",
    "P=4/4=1.000",
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(_PIECES), max_size=5).map("".join), max_size=4),
    st.dictionaries(st.lists(st.sampled_from(_PIECES), max_size=3).map("".join), st.text(max_size=20), max_size=3),
)
def test_the_document_check_never_skips_a_string_the_walk_would_change(texts: list[str], state: dict[str, str]) -> None:
    class Result(BaseModel):
        texts: list[str]
        state: dict[str, str]

    redactor = Redactor([Secret("hunter2hunter2", "DB_PASSWORD"), Secret('quo"te-secret', "QUOTED_SECRET")])
    result = Result(texts=texts, state=state)
    dumped = result.model_dump(mode="json")
    walked = redactor.data(dumped)
    if walked is not dumped:
        assert redactor.could_change(result.model_dump_json()), walked
        assert redactor.model(result) == Result.model_validate(walked)
    else:
        assert redactor.model(result) is result


_SCAN_PIECES = [*_PIECES, "gh", "ghp_", "gho_", "github_pat_", "AKIA", "ASIA", "AK", "sk-", "eyJ", "xox", "?", "&"]
_SCAN_PIECES += ["?token=abc", "&api_key=x", "?q=1", "&sig=", "KEY-----", "PRIVATE KEY-----"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_SCAN_PIECES), max_size=12).map("".join))
def test_the_documents_fast_scans_find_what_the_plain_ones_find(document: str) -> None:
    # The grouped literal search and the URL-parameter match tried only at `?`/`&` are shortcuts of these.
    assert any(find(document) for find in redact._TOKEN_LITERAL_FINDERS) == any(
        literal in document for literal in redact._TOKEN_LITERALS
    )
    assert redact._url_secret_parameter_in(document) == bool(redact._URL_SECRET_PARAMETER.search(document))


def test_a_clean_result_is_not_walked_string_by_string() -> None:
    class Result(BaseModel):
        texts: list[str]

    redactor = Redactor([Secret("hunter2hunter2", "DB_PASSWORD")])
    clean = Result(texts=["Order 7 has shipped.", "score=1.0 >= 0.8", "see https://example.com/a", "x@y.z"])
    assert not redactor.could_change(clean.model_dump_json())
    assert redactor.could_change(Result(texts=["x\nMY_TOKEN=abcdefgh1"]).model_dump_json())
    assert redactor.could_change(Result(texts=["\tghs_" + "A1b2C3d4E5" * 4]).model_dump_json())


def test_a_model_and_its_encoded_form_are_redacted_together() -> None:
    # The pipeline writes the JSON the check read: clean, it is that very text; dirty, the redacted model's.
    class Result(BaseModel):
        texts: list[str]

    def encode(result: Result) -> bytes:
        return result.model_dump_json().encode("utf-8")

    redactor = Redactor([Secret("hunter2hunter2", "DB_PASSWORD")])
    clean = Result(texts=["Order 7 has shipped.", "a?b=c&d=e"])
    kept, data = redactor.encoded_model(clean, encode)
    assert kept is clean and data == encode(clean)
    dirty = Result(texts=["pw hunter2hunter2", "see ?token=abc123"])
    redacted, data = redactor.encoded_model(dirty, encode)
    assert redacted == Result(texts=[f"pw {marker('DB_PASSWORD')}", f"see ?token={marker('credential')}"])
    assert data == encode(redacted) and b"hunter2" not in data and b"abc123" not in data


def test_a_model_and_its_json_text_are_redacted_together() -> None:
    class Header(BaseModel):
        notes: list[str]

    redactor = Redactor([Secret("hunter2hunter2", "DB_PASSWORD")])
    clean = Header(notes=["ran 3 cases"])
    kept, text = redactor.model_json(clean)
    assert kept is clean and text == clean.model_dump_json()
    redacted, text = redactor.model_json(Header(notes=["pw hunter2hunter2"]))
    assert redacted == Header(notes=[f"pw {marker('DB_PASSWORD')}"]) and text == redacted.model_dump_json()
