"""junit.py: JUnit XML rendered whole against a snapshot; structure, counts and injection checks."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable

from evalward.model import RunResult
from evalward.report.junit import render_junit


def test_sample_run_snapshot(sample_run: RunResult, snapshot: Callable[[str, str], None]):
    snapshot("sample_run.junit.xml", render_junit(sample_run))


def test_structure_and_counts(sample_run: RunResult):
    root = ET.fromstring(render_junit(sample_run))
    assert root.tag == "testsuites"
    # hand count: 5 case results: greeting passed; book_flight, multi_turn, réservation_東京 failed; slow_lookup error
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "3", "1")
    # time = sum of latencies: 0.41 + 1.3 + 90.0 + 2.5 + 0.75 = 94.96
    assert root.get("time") == "94.960"
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "travel"
    names = [(c.get("classname"), c.get("name"), c.get("time")) for c in suite.findall("testcase")]
    assert names[:2] == [("travel", "greeting [rep 1]", "0.410"), ("travel", "book_flight [rep 1]", "1.300")]
    greeting, book, slow = suite.findall("testcase")[:3]
    assert list(greeting) == []
    failure = book.find("failure")
    assert failure is not None
    assert failure.get("message") == "tool_trajectory_avg_score: FAILED, score 0.000, threshold ≥ 1.000"
    assert '- book_flight(extras={"bags": 1}, flight_id="AF123", seat="aisle")' in (failure.text or "")
    error = slow.find("error")
    assert error is not None
    assert (error.get("type"), error.get("message")) == ("timeout", "turn 2 exceeded the 30s timeout")
    assert "turn 2, 3 attempts" in (error.text or "")


def test_injection_is_neutralised_and_xml_stays_valid(hostile_run: RunResult):
    xml = render_junit(hostile_run)
    root = ET.fromstring(xml)  # parses although the agent printed \x1b and \x07
    texts = [root.get("name") or ""]
    for element in root.iter():
        texts += [element.text or "", *element.attrib.values()]
    everything = "\n".join(texts)
    assert re.search(r"@(?!\u200b)", everything) is None
    assert re.search(r"#\d", everything) is None
    assert "<!--" not in everything
    assert "::" not in everything and "##[" not in everything
    assert "\u202e" not in everything and "\x1b" not in everything and "\x07" not in everything
    # the raw file never carries markup from the agent: the serializer escapes it
    assert "</details>" not in xml and "<img" not in xml
    assert "[bold]x[/bold]" in everything  # no special meaning in XML: kept literally
