"""The redactor: which values count as secrets, which shapes are caught, and that prose survives."""

from __future__ import annotations

import base64
import json
import textwrap
from types import MappingProxyType
from urllib.parse import quote

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
        # issue #31 row 7: the names a first rule (`…TOKEN`, `…KEY`… at the end) did not know
        ("MY_SERVICE_TOKENS", True),
        ("OPENAI_API_KEY_2", True),
        ("API_KEYS", True),
        ("DB_PASS", True),
        ("DB_PWD", True),
        ("SERVICE_AUTH", True),
        ("CLIENT_SECRET_ID", True),
        ("GOOGLE_APPLICATION_CREDENTIALS_JSON", True),
        ("AUTH_HEADER", True),
        ("SESSION_COOKIE", True),
        ("PRIVATE_KEY_PEM", True),
        ("WEBHOOK_SECRET_V2", True),
        ("SESSION_ID", True),
        ("GH_PAT", True),
        ("HTTP_AUTHORIZATION", True),
        ("TOKEN2", True),
        ("GHTOKEN", True),
        ("openaiApiKey", True),
        ("spring.datasource.password", True),
        # secret words only as whole parts (or long words closing one); pointers to a secret; the shell's PWD
        ("KEYBOARD_LAYOUT", False),
        ("PASSAGE_COUNT", False),
        ("MONKEY_PATCH", False),
        ("BYPASS_CACHE", False),
        ("OAUTH_SCOPES", False),
        ("POSSESSION", False),
        ("AUTHOR_NAME", False),
        ("JUDGE_API_KEY_ENV", False),
        ("INPUT_JUDGE-API-KEY-ENV", False),
        ("PRIVATE_KEY_FILE", False),
        ("EVALWARD_SECRET_NAMES", False),
        ("PWD", False),
        ("OLDPWD", False),
        ("PASS_RULE", False),  # `PASS` is a password only as the last part
        ("INPUT_PASS-RULE", False),
        ("EVALWARD_LANGGRAPH_RESPONSE_KEY", False),  # names a key of the agent's answer
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_a_name_with_a_secret_word_before_its_last_part_may_hold_a_setting() -> None:
    # `SESSION_BACKEND=database`: a plain lower-case word there is a setting; anything else is a secret, and any
    # value of a name whose last part is a secret word is one (a weak password too).
    environ = {
        "SESSION_BACKEND": "database",
        "AUTH_MODE": "mean_over_runs",
        "SESSION_ID": "a1b2c3d4e5f6",
        "PRIVATE_KEY_PEM": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
        "DB_PASSWORD": "letmeinplease",
    }
    assert [s.name for s in secrets_from_environment(environ)] == ["SESSION_ID", "PRIVATE_KEY_PEM", "DB_PASSWORD"]


def test_more_secret_names_come_from_the_settings_and_the_environment() -> None:
    environ = {
        "EVALWARD_SECRET_NAMES": "legacy_*, ACME_MATERIAL",
        "LEGACY_SIGNER": "s1gner-value-9",
        "ACME_MATERIAL": "acme-material-7",
    }
    assert {s.name for s in secrets_from_environment(environ)} == {"LEGACY_SIGNER", "ACME_MATERIAL"}
    assert not is_secret_name("OTHER_MATERIAL")
    redact.configure_secret_names(["other_*"])
    try:
        assert is_secret_name("OTHER_MATERIAL")
    finally:
        redact.configure_secret_names([])
    assert not is_secret_name("OTHER_MATERIAL")


def test_environment_values_are_replaced_by_a_marker_naming_the_variable() -> None:
    environ = {
        "GITHUB_TOKEN": "plain-value-123",
        "SHORT_KEY": "1",
        "FLAG_SECRET": "true",
        "HOME": "/root",
        "SESSION_TIMEOUT": "86400000",
        "AUTH_RETRIES": "12345678901",
        "SERVICE_AUTH": "aaaabbbbaaaa",
        "DB_PASS": "pw4!",
        "KEY_SPACED": " a b c d e ",
    }
    redactor = Redactor(secrets_from_environment(environ))
    assert redactor.text("token plain-value-123 home /root") == f"token {marker('GITHUB_TOKEN')} home /root"
    # Values too short, too plain (fewer than 5 different characters, a number, `true`) or under 8 characters
    # once spaces are left out are not secrets: masking them would shred every report.
    assert redactor.secret_count == 1
    plain = "1 true 86400000 12345678901 aaaabbbbaaaa pw4! abcde a b c d e"
    assert redactor.text(plain) == plain


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
    # spellings of the secrets of the property test below: encoded, split, reversed, in pieces
    "aHVudGVyMmh1bnRlcjI=",
    "68756e74657232",
    "68756E74657232",
    "2retnuh",
    "hunter2",
    "h u n t e r 2",
    'long\\se"cret-',
    "value-0123456789",
    'ng\\se"cret-value-01',
    "DB_PWD=",
    "\\u0001",
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

    redactor = Redactor(
        [
            Secret("hunter2hunter2", "DB_PASSWORD"),
            Secret('quo"te-secret', "QUOTED_SECRET"),
            Secret('long\\se"cret-value-0123456789', "LONG_SECRET"),
        ]
    )
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


# -- issue #31 row 6: a secret in any spelling -----------------------------------------------------------

# Three secrets as the attacker used them: a GitHub token, an OpenAI key, and a token of no known shape
# holding characters URL encoding escapes (so its URL-encoded spelling differs from the value).
SPELLED = {
    "GITHUB_PAT": "ghp_" + "Kx7Qm2Vt9Lp4Zr8Nw3Bd6Hs1Fy5Jc0Ga" + "Ue",
    "OPENAI_API_KEY": "sk-proj-" + "Tq4Wn8Rb2Ys6Kd0Mf3Hx7Lc1Pv5Gj9Az" + "Ee",
    "MY_SERVICE_TOKEN": "s3rv/ice+t0ken=Q9&Zx",
}


def _spellings_of(value: str) -> dict[str, str]:
    """The seven spellings of issue #31 row 6, and more."""
    data = value.encode()
    half = len(value) // 2
    return {
        "base64": base64.b64encode(data).decode(),
        "base64 unpadded": base64.b64encode(data).decode().rstrip("="),
        "base64url": base64.urlsafe_b64encode(data).decode(),
        "hex": data.hex(),
        "HEX": data.hex().upper(),
        "reversed": value[::-1],
        "lower case": value.lower(),
        "upper case": value.upper(),
        "spaced": " ".join(value),
        "two lines": f"{value[:half]}\n{value[half:]}",
        "first 16": value[:16],
        "last 17": value[-17:],
        "URL-encoded": quote(value, safe=""),
        "every byte URL-encoded": "".join(f"%{byte:02x}" for byte in data),
        "base64 in lines of 20": "\n".join(textwrap.wrap(base64.b64encode(data).decode(), 20)),
    }


@pytest.mark.parametrize("kind", list(_spellings_of("x" * 20)))
@pytest.mark.parametrize("name", list(SPELLED))
def test_every_spelling_of_a_secret_is_masked_in_text_and_in_documents(name: str, kind: str) -> None:
    redactor = Redactor([Secret(value, variable) for variable, value in SPELLED.items()])
    spelled = _spellings_of(SPELLED[name])[kind]
    assert redactor.text(f"echo: {spelled} (done)") == f"echo: {marker(name)} (done)"

    class Reply(BaseModel):
        text: str
        state: dict[str, str]

    reply = Reply(text=f"echo: {spelled}", state={"k": f"«{spelled}»"})
    assert redactor.could_change(reply.model_dump_json())
    assert redactor.model(reply) == Reply(text=f"echo: {marker(name)}", state={"k": f"«{marker(name)}»"})


@pytest.mark.parametrize("shift", [0, 1, 2])
def test_a_secret_inside_a_longer_base64_stream_is_masked_at_each_alignment(shift: int) -> None:
    # Base64 turns 3 bytes into 4 characters: the secret starts at byte 0, 1 or 2 of a group, and only the
    # characters made of its bits alone (from ceil(8·start/6) to floor(8·end/6)) are the same in every stream.
    value = SPELLED["MY_SERVICE_TOKEN"]
    # (`~` after it: its first bits are not zero, so no character past the secret's own reads as the end of the
    # secret encoded alone, which is masked too)
    before, after = b"{'note': 'x" + b"y" * shift, b"~', 'more': 'text'}"
    stream = base64.b64encode(before + value.encode() + after).decode()
    start, end = len(before), len(before) + len(value)
    first, last = -(-8 * start // 6), 8 * end // 6
    redactor = Redactor([Secret(value, "MY_SERVICE_TOKEN")])
    assert redactor.text(f"blob={stream}") == f"blob={stream[:first]}{marker('MY_SERVICE_TOKEN')}{stream[last:]}"


def test_pieces_count_from_16_characters_and_only_for_values_that_are_not_places() -> None:
    token = SPELLED["GITHUB_PAT"]
    path = "/home/runner/work/repo/repo/gha-creds-0123456789.json"
    redactor = Redactor([Secret(token, "GITHUB_PAT"), Secret(path, "GOOGLE_APPLICATION_CREDENTIALS")])
    assert redactor.text(f"[{token[3:19]}]") == f"[{marker('GITHUB_PAT')}]"
    assert redactor.text(f"[{token[3:18]}]") == f"[{token[3:18]}]"  # 15 characters: too short to tell
    # A path's pieces are other paths' too: only the whole value is masked.
    assert (
        redactor.text("see /home/runner/work/repo/repo/evals/a.json") == "see /home/runner/work/repo/repo/evals/a.json"
    )
    assert redactor.text(f"creds {path}.") == f"creds {marker('GOOGLE_APPLICATION_CREDENTIALS')}."


def test_spelled_secrets_leave_ordinary_text_alone() -> None:
    redactor = Redactor([Secret(value, name) for name, value in SPELLED.items()])
    prose = (
        "Order 50 has shipped. KEYBOARD_LAYOUT=us-international, PASSAGE=3; sha 0123456789abcdef0123456789abcdef; "
        "base64 aGVsbG8gd29ybGQ= and %2F%2B%3D in a URL; ghp_ is a prefix, sk-proj- too."
    )
    assert redactor.text(prose) == prose


def test_assignments_to_any_secret_name_are_masked() -> None:
    redactor = Redactor()
    assert redactor.text("DB_PWD=abcdefgh1 API_KEYS=k1k2k3k4k5") == (
        f"DB_PWD={marker('DB_PWD')} API_KEYS={marker('API_KEYS')}"
    )
    assert redactor.text("A=B_TOKEN=abcdefgh1") == f"A=B_TOKEN={marker('B_TOKEN')}"
    assert redactor.text("KEYBOARD_LAYOUT=us-international") == "KEYBOARD_LAYOUT=us-international"
    assert redactor.text("JUDGE_API_KEY_ENV=OPENAI_API_KEY") == "JUDGE_API_KEY_ENV=OPENAI_API_KEY"


def test_what_would_be_removed_is_said_without_any_part_of_it() -> None:
    redactor = Redactor([Secret("abcdefgh12345678", "MY_SERVICE_TOKEN"), Secret("pw-9876543", "EVALWARD_DB password")])
    assert redactor.found("case-abcdefgh12345678-one") == ["the value of MY_SERVICE_TOKEN"]
    assert redactor.found("x-pw-9876543 and ghp_" + "a1" * 18) == [
        "the password in EVALWARD_DB",
        "a GitHub token",
    ]
    assert redactor.found("an [redacted X] marker already there") == []
    assert redactor.found("plain id") == []


@pytest.mark.parametrize("name", list(SPELLED))
def test_the_document_check_finds_a_spelling_at_every_offset(name: str) -> None:
    # The check reads a document 8 bytes (or 4) at a time from fixed offsets, and keeps only some windows of each
    # spelling: any offset of a spelling, or of a 16-character piece, must still be found.
    redactor = Redactor([Secret(value, variable) for variable, value in SPELLED.items()])
    value = SPELLED[name]
    for spelled in [*_spellings_of(value).values(), value[5:21], value[-16:]]:
        for shift in range(16):
            document = json.dumps({"t": "x" * shift + spelled + "y"}, ensure_ascii=False)
            assert redactor.could_change(document), (spelled, shift)
    # (it may say yes for less: the walk then decides, and 15 characters are not a piece)
    assert redactor.text(value[5:20]) == value[5:20]
