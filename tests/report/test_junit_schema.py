"""`--junit` output against the rules of the Jenkins xunit-plugin `junit-10.xsd` (issue #30, row 15).

junit-10.xsd is the schema CI test reporters follow. It is not copied here: `JUNIT_10_RULES` is our own XSD,
written from the schema's facts, and validated with `xmlschema`:
- `<testsuites>`: attributes name, time, tests, failures, errors only; children: `<testsuite>` only;
- `<testsuite>`: name, tests, failures, errors required; group, time, skipped, timestamp, hostname, id, package,
  file, log, url optional; children, any order, repeated: testsuite, properties, testcase, system-out,
  system-err;
- `<properties>` holds `<property name= value=>` (both required);
- `<testcase>`: name required; time, classname, group optional; children, any order, repeated: skipped, error,
  failure, rerunFailure, rerunError, flakyFailure, flakyError, system-out, system-err;
- skipped, error, failure: optional type and message, text content;
- the `time` of a suite or of the suites: `(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\\.[0-9]*)?`.

The documents validated are real: `evalward run` on three eval sets (passing, failing and erroring cases,
two repetitions), and the two halves of a sharded run, one of which holds a set with no case in it (evalward has
no skipped status: every selected case runs, so a set this shard left empty is the nearest thing).
`test_the_rules_have_teeth` shows the schema refuses what it must, the output before the fix included.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from evalward.model import RunResult
from evalward.report.junit import render_junit

TIME = r"(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?"

JUNIT_10_RULES = f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- Written for evalward's tests from the rules of junit-10.xsd (see the module docstring); not a copy of it. -->
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:simpleType name="Seconds">
    <xs:restriction base="xs:string"><xs:pattern value="{TIME}"/></xs:restriction>
  </xs:simpleType>

  <xs:complexType name="Outcome" mixed="true">
    <xs:attribute name="type" type="xs:string"/>
    <xs:attribute name="message" type="xs:string"/>
  </xs:complexType>

  <xs:complexType name="Property">
    <xs:attribute name="name" type="xs:string" use="required"/>
    <xs:attribute name="value" type="xs:string" use="required"/>
  </xs:complexType>

  <xs:complexType name="Properties">
    <xs:sequence><xs:element name="property" type="Property" minOccurs="0" maxOccurs="unbounded"/></xs:sequence>
  </xs:complexType>

  <xs:complexType name="TestCase">
    <xs:choice minOccurs="0" maxOccurs="unbounded">
      <xs:element name="skipped" type="Outcome"/>
      <xs:element name="error" type="Outcome"/>
      <xs:element name="failure" type="Outcome"/>
      <!-- never written by evalward; their own content rules are beyond what these tests check -->
      <xs:element name="rerunFailure" type="Outcome"/>
      <xs:element name="rerunError" type="Outcome"/>
      <xs:element name="flakyFailure" type="Outcome"/>
      <xs:element name="flakyError" type="Outcome"/>
      <xs:element name="system-out" type="xs:string"/>
      <xs:element name="system-err" type="xs:string"/>
    </xs:choice>
    <xs:attribute name="name" type="xs:string" use="required"/>
    <xs:attribute name="time" type="xs:string"/>
    <xs:attribute name="classname" type="xs:string"/>
    <xs:attribute name="group" type="xs:string"/>
  </xs:complexType>

  <xs:complexType name="TestSuite">
    <xs:choice minOccurs="0" maxOccurs="unbounded">
      <xs:element name="testsuite" type="TestSuite"/>
      <xs:element name="properties" type="Properties"/>
      <xs:element name="testcase" type="TestCase"/>
      <xs:element name="system-out" type="xs:string"/>
      <xs:element name="system-err" type="xs:string"/>
    </xs:choice>
    <xs:attribute name="name" type="xs:string" use="required"/>
    <xs:attribute name="tests" type="xs:string" use="required"/>
    <xs:attribute name="failures" type="xs:string" use="required"/>
    <xs:attribute name="errors" type="xs:string" use="required"/>
    <xs:attribute name="group" type="xs:string"/>
    <xs:attribute name="time" type="Seconds"/>
    <xs:attribute name="skipped" type="xs:string"/>
    <xs:attribute name="timestamp" type="xs:string"/>
    <xs:attribute name="hostname" type="xs:string"/>
    <xs:attribute name="id" type="xs:string"/>
    <xs:attribute name="package" type="xs:string"/>
    <xs:attribute name="file" type="xs:string"/>
    <xs:attribute name="log" type="xs:string"/>
    <xs:attribute name="url" type="xs:string"/>
  </xs:complexType>

  <xs:element name="testsuites">
    <xs:complexType>
      <xs:sequence><xs:element name="testsuite" type="TestSuite" minOccurs="0" maxOccurs="unbounded"/></xs:sequence>
      <xs:attribute name="name" type="xs:string"/>
      <xs:attribute name="time" type="Seconds"/>
      <xs:attribute name="tests" type="xs:string"/>
      <xs:attribute name="failures" type="xs:string"/>
      <xs:attribute name="errors" type="xs:string"/>
    </xs:complexType>
  </xs:element>
</xs:schema>
"""


@pytest.fixture(scope="module")
def schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(JUNIT_10_RULES)


def problems(schema: xmlschema.XMLSchema, xml: str) -> list[str]:
    """Every violation of the rules, as `path: reason` (empty when the document is valid)."""
    return [f"{error.path}: {error.reason}" for error in schema.iter_errors(xml)]


# --- real output of `evalward run` -------------------------------------------------------------------------------

AGENT = """\
def run(request):
    if request["query"] == "boom":
        raise RuntimeError("the agent fell over <here> & there")
    return {"response": request["query"]}
"""

ALPHA = """\
evalward: 1
eval_set_id: alpha
metrics: [response_exact]
cases:
  - {id: passes, query: hello, expect: {response: hello}}
  - {id: fails, query: hello, expect: {response: goodbye}}
  - {id: errors, query: boom, expect: {response: boom}}
"""

BETA = """\
evalward: 1
eval_set_id: beta
metrics: [response_exact]
cases:
  - id: second_turn_fails
    turns:
      - {query: first, expect: {response: first}}
      - {query: "<b>bold</b> & \\"quoted\\" ]]> \\u0007 東京 🚀", expect: {response: something else}}
"""

GAMMA = """\
evalward: 1
eval_set_id: gamma
metrics: [response_exact]
cases:
  - {id: only, query: hi, expect: {response: hi}}
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("junit_schema")
    (root / "agent.py").write_text(AGENT, encoding="utf-8")
    for name, text in (("alpha", ALPHA), ("beta", BETA), ("gamma", GAMMA)):
        (root / f"{name}.eval.yaml").write_text(text, encoding="utf-8")
    return root


def run_junit(workspace: Path, name: str, *extra: str) -> str:
    """`evalward run` on the three sets with `--junit`; the file's text (the run fails: exit 1)."""
    out = workspace / f"{name}.xml"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalward",
            "run",
            "alpha.eval.yaml",
            "beta.eval.yaml",
            "gamma.eval.yaml",
            "--agent",
            "agent.py:run",
            "--no-history",
            "--retries",
            "0",
            "--junit",
            str(out),
            *extra,
        ],
        cwd=workspace,
        env={**os.environ, "EVALWARD_DEBUG": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode in (0, 1), completed.stdout + completed.stderr
    return out.read_text(encoding="utf-8")


def counts(element: ET.Element) -> tuple[str | None, ...]:
    return tuple(element.get(key) for key in ("tests", "failures", "errors", "skipped"))


def test_a_run_with_passes_failures_errors_and_repetitions_is_valid(
    schema: xmlschema.XMLSchema, workspace: Path
) -> None:
    xml = run_junit(workspace, "whole", "--repeat", "2")
    assert problems(schema, xml) == []

    root = ET.fromstring(xml)
    # hand count, 2 repetitions each: alpha 3 cases (1 passes, 1 fails, 1 errors), beta 1 (fails), gamma 1 (passes)
    assert counts(root) == ("10", "4", "2", None)
    suites = {suite.get("name"): suite for suite in root.findall("testsuite")}
    assert list(suites) == ["alpha", "beta", "gamma"]
    assert counts(suites["alpha"]) == ("6", "2", "2", "0")
    assert counts(suites["beta"]) == ("2", "2", "0", "0")
    assert counts(suites["gamma"]) == ("2", "0", "0", "0")

    outcomes = {
        (case.get("classname"), case.get("name")): [child.tag for child in case] for case in root.iter("testcase")
    }
    assert outcomes == {
        ("alpha", "passes [rep 1]"): [],
        ("alpha", "passes [rep 2]"): [],
        ("alpha", "fails [rep 1]"): ["failure"],
        ("alpha", "fails [rep 2]"): ["failure"],
        ("alpha", "errors [rep 1]"): ["error"],
        ("alpha", "errors [rep 2]"): ["error"],
        ("beta", "second_turn_fails [rep 1]"): ["failure"],
        ("beta", "second_turn_fails [rep 2]"): ["failure"],
        ("gamma", "only [rep 1]"): [],
        ("gamma", "only [rep 2]"): [],
    }
    error = next(case for case in root.iter("testcase") if case.get("name") == "errors [rep 1]").find("error")
    assert error is not None and error.get("type") == "agent_error"
    assert "the agent fell over <here> & there" in (error.get("message") or "")
    failure = next(case for case in root.iter("testcase") if case.get("name") == "second_turn_fails [rep 1]")
    text = failure.findtext("failure") or ""
    assert '<b>bold</b> & "quoted" ]]>' in text and "東京 🚀" in text and "\x07" not in text

    # What a junitparser-style reader relies on: each suite's counts are its test cases', the root's are the sums,
    # and every `time` is plain decimal seconds (testcases too, although the schema leaves theirs free).
    for suite in suites.values():
        cases = suite.findall("testcase")
        assert int(suite.get("tests") or -1) == len(cases)
        assert int(suite.get("failures") or -1) == sum(case.find("failure") is not None for case in cases)
        assert int(suite.get("errors") or -1) == sum(case.find("error") is not None for case in cases)
    for key in ("tests", "failures", "errors"):
        assert int(root.get(key) or -1) == sum(int(suite.get(key) or 0) for suite in suites.values())
    times = [root.get("time"), *(e.get("time") for e in root.iter() if e.tag in ("testsuite", "testcase"))]
    assert len(times) == 14 and all(t is not None and re.fullmatch(TIME, t) for t in times), times


def test_both_halves_of_a_sharded_run_are_valid_and_one_has_an_empty_suite(
    schema: xmlschema.XMLSchema, workspace: Path
) -> None:
    halves = [run_junit(workspace, f"shard{index}", "--shard", f"{index}/2") for index in (1, 2)]
    for xml in halves:
        assert problems(schema, xml) == []
    suites = [{s.get("name"): s for s in ET.fromstring(xml).findall("testsuite")} for xml in halves]
    # Every shard lists every set, and each of the 5 cases runs in exactly one shard.
    assert [list(s) for s in suites] == [["alpha", "beta", "gamma"]] * 2
    assert sum(int(s.get("tests") or 0) for half in suites for s in half.values()) == 5
    # gamma's single case ran in one half: the other half holds gamma as an empty suite, which must be valid too.
    empty = [half["gamma"] for half in suites if half["gamma"].get("tests") == "0"]
    assert len(empty) == 1
    assert list(empty[0]) == [] and counts(empty[0]) == ("0", "0", "0", "0")


def test_the_hand_built_report_runs_are_valid(
    schema: xmlschema.XMLSchema, sample_run: RunResult, hostile_run: RunResult
) -> None:
    assert problems(schema, render_junit(sample_run)) == []
    assert problems(schema, render_junit(hostile_run)) == []
    empty = sample_run.model_copy(update={"cases": [], "eval_sets": []})
    assert problems(schema, render_junit(empty)) == []


def test_times_that_are_not_finite_non_negative_seconds_are_written_as_zero(
    schema: xmlschema.XMLSchema, sample_run: RunResult
) -> None:
    odd = [float("nan"), -1.5, float("inf")]
    cases = [
        case.model_copy(update={"latency_s": latency}) for case, latency in zip(sample_run.cases[:3], odd, strict=True)
    ]
    xml = render_junit(sample_run.model_copy(update={"cases": cases}))
    assert problems(schema, xml) == []
    root = ET.fromstring(xml)
    assert [case.get("time") for case in root.iter("testcase")] == ["0.000", "0.000", "0.000"]
    # each counts as 0 in the sums too, instead of turning them into nan or a negative number
    assert root.get("time") == "0.000"
    assert [suite.get("time") for suite in root.iter("testsuite")] == ["0.000"]


# --- the rules refuse what junit-10.xsd refuses ------------------------------------------------------------------

VALID = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="evalward" tests="1" failures="0" errors="0" time="1,234.5">
  <testsuite name="s" tests="1" failures="0" errors="0" skipped="0" time="0.410" timestamp="2025-06-01T12:00:00">
    <properties><property name="commit" value="abc"/></properties>
    <testcase name="c" classname="s" time="0.410"><system-out>out</system-out><skipped message="m"/></testcase>
  </testsuite>
</testsuites>
"""


@pytest.mark.parametrize(
    ("old", "new", "refusal"),
    [
        # the output before the fix: `skipped` on <testsuites>
        ('errors="0" time="1,234.5"', 'errors="0" skipped="0" time="1,234.5"', "/testsuites: 'skipped' attribute not"),
        ('<testcase name="c"', '<testcase file="a.yaml" line="3" name="c"', "/testcase: 'file' attribute not allowed"),
        ("<system-out>out</system-out>", "<properties/>", "/testcase: Unexpected child with tag 'properties'"),
        ('<testsuite name="s" tests="1"', '<testsuite tests="1"', "/testsuite: missing required attribute 'name'"),
        ('failures="0" errors="0" skipped', 'failures="0" skipped', "/testsuite: missing required attribute 'errors'"),
        ('time="0.410" timestamp', 'time="4.1e-01" timestamp', "/testsuite: attribute time='4.1e-01': value doesn't"),
        ('<property name="commit" value="abc"/>', '<property name="commit"/>', "/property: missing required attribute"),
        (
            "</testsuite>\n</testsuites>",
            '</testsuite>\n  <testcase name="stray"/>\n</testsuites>',
            "/testsuites: Unexpected child with tag 'testcase'",
        ),
    ],
)
def test_the_rules_have_teeth(schema: xmlschema.XMLSchema, old: str, new: str, refusal: str) -> None:
    """Each edit breaks one rule of `VALID`; the schema must refuse it at that element, for that reason."""
    assert problems(schema, VALID) == []
    assert VALID.count(old) == 1
    found = problems(schema, VALID.replace(old, new))
    assert any(refusal in problem for problem in found), found
