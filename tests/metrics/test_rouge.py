"""Tokenizers and ROUGE-1 arithmetic (`evalward.metrics.rouge`)."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest
from rouge_score import rouge_scorer, tokenizers

from evalward.metrics.rouge import Rouge1, default_tokens, rouge1, stem, tokenize, unicode_tokens


def test_default_tokenizer_keeps_only_lowercase_ascii_alphanumerics_and_stems() -> None:
    # "Running" -> "running" -> stem "run"; "dogs!" -> "dogs" -> "dog"; "device_2" splits at "_";
    # "naïve" splits at "ï" into "na" and "ve"; "你好" has no [a-z0-9] at all.
    assert default_tokens("Running dogs! device_2 naïve 你好") == ["run", "dog", "devic", "2", "na", "ve"]


def test_short_tokens_are_not_stemmed() -> None:
    # rouge-score stems only tokens longer than 3 characters: "was" stays, "ties" -> "tie".
    assert default_tokens("was ties") == ["was", "tie"]
    assert stem("was") == "was"


def test_unicode_tokenizer_rules() -> None:
    # NFKC: "ﬁ" -> "fi", "１２３" -> "123"; lower-case; non-ASCII words stay whole and unstemmed ("naïve");
    # ASCII words are stemmed ("approaches" -> "approach"); CJK characters are one token each.
    assert unicode_tokens("ﬁle １２３ Naïve approaches 你好世界") == [
        "file",
        "123",
        "naïve",
        "approach",
        "你",
        "好",
        "世",
        "界",
    ]


def test_unicode_tokenizer_splits_kana_and_hangul_per_character() -> None:
    assert unicode_tokens("ありがとう") == ["あ", "り", "が", "と", "う"]
    assert unicode_tokens("안녕 세계") == ["안", "녕", "세", "계"]


def test_unicode_tokenizer_attaches_thai_combining_marks_to_their_base() -> None:
    # สวัสดี = ส ว+ั ส ด+ี: base consonants start clusters, vowel marks (category Mn) attach.
    assert unicode_tokens("สวัสดี") == ["ส", "วั", "ส", "ดี"]


def test_unicode_tokenizer_separators() -> None:
    # "_" and punctuation separate; Cyrillic words stay whole; "device_2" -> "devic" (stemmed), "2".
    assert unicode_tokens("device_2, Привет-мир!") == ["devic", "2", "привет", "мир"]
    assert unicode_tokens("") == []
    assert unicode_tokens(" ...  ") == []


def test_unicode_tokenizer_on_ascii_equals_default() -> None:
    text = "The U.S.A. was running 42 connections/second -- happily."
    assert unicode_tokens(text) == default_tokens(text) == tokenize(text, "default") == tokenize(text, "unicode")


def test_default_tokenizer_equals_rouge_score_on_random_text() -> None:
    reference = tokenizers.DefaultTokenizer(use_stemmer=True)
    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFXYZ0123456789  .,_-'\nïé你ß"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert default_tokens(text) == reference.tokenize(text), text


def test_rouge1_counts_clipped_overlap() -> None:
    # prediction [a, a, b, c], reference [a, b, b, d, e]:
    # overlap = min(2,1) for a + min(1,2) for b = 2; P = 2/4 = 0.5; R = 2/5 = 0.4; F = 2·0.5·0.4/0.9 = 0.444…
    result = rouge1(["a", "a", "b", "c"], ["a", "b", "b", "d", "e"])
    assert result == Rouge1(
        overlap=2, prediction_count=4, reference_count=5, precision=0.5, recall=0.4, fmeasure=2 * 0.5 * 0.4 / 0.9
    )
    assert result.explain() == "overlap=2, P=2/4=0.500, R=2/5=0.400, F=0.444"


def test_rouge1_empty_sides_score_zero() -> None:
    # rouge-score divides by max(count, 1): empty vs empty -> P = R = 0/1 = 0, F = 0.
    assert rouge1([], []).fmeasure == 0.0
    assert rouge1(["a"], []).fmeasure == 0.0
    assert rouge1([], ["a"]).explain() == "overlap=0, P=0/0=0.000, R=0/1=0.000, F=0.000"


@pytest.mark.parametrize(
    ("prediction", "reference"),
    [
        ("the cat sat on the mat", "the cat is on the mat"),
        ("running dogs run", "a dog runs"),
        ("", "text"),
        ("The U.S.A.", "usa"),
    ],
)
def test_rouge1_fmeasure_is_bit_identical_to_rouge_score(prediction: str, reference: str) -> None:
    expected = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True).score(reference, prediction)["rouge1"]
    ours = rouge1(default_tokens(prediction), default_tokens(reference))
    assert (ours.precision, ours.recall, ours.fmeasure) == (expected.precision, expected.recall, expected.fmeasure)


def test_importing_rouge_does_not_import_nltk() -> None:
    code = "import sys, evalward.metrics.rouge, evalward.metrics.adk, evalward.metrics.response; print('nltk' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
