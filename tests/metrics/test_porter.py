"""evalward's Porter stemmer (`evalward.metrics.porter`) against nltk's, and ROUGE-1 against rouge-score.

Differential: nltk 3.10.4's `PorterStemmer()` (NLTK_EXTENSIONS mode, what rouge-score 0.1.2 builds) and
rouge-score's `RougeScorer(["rouge1"], use_stemmer=True)` are the oracles; both are test dependencies only.
No English word list ships with this environment (no /usr/share/dict, no nltk_data), so the words are:
every `[a-z]+` token of the Python standard library's sources (docstrings and comments are English prose),
every `[a-z0-9]+` token of this repository's tracked text files, and synthetic words — short stems over
a consonant/vowel/y alphabet followed by every suffix the algorithm knows, one or two deep.
"""

from __future__ import annotations

import itertools
import random
import re
import subprocess
import sys
import sysconfig
from functools import cache
from pathlib import Path

import pytest
from nltk.stem.porter import PorterStemmer
from rouge_score import rouge_scorer

from evalward.metrics.porter import stem
from evalward.metrics.rouge import default_tokens, rouge1

ROOT = Path(__file__).resolve().parents[2]
TEXT_SUFFIXES = {".md", ".py", ".json", ".jsonl", ".yaml", ".yml", ".txt", ".toml"}

SUFFIXES = (
    "", "s", "es", "ies", "sses", "ss", "ed", "ied", "eed", "ing", "ings", "y", "ly", "e", "at", "bl", "iz",
    "ate", "ational", "tional", "enci", "ence", "anci", "ance", "izer", "ize", "bli", "ble", "abli", "able",
    "alli", "al", "entli", "ent", "eli", "ousli", "ous", "ization", "ation", "ations", "ator", "alism",
    "iveness", "ive", "fulness", "ful", "ousness", "aliti", "iviti", "biliti", "fulli", "logi", "log", "icate",
    "ic", "ative", "alize", "iciti", "ical", "ness", "er", "ers", "ible", "ant", "ement", "ment", "ion",
    "sion", "tion", "ou", "ism", "iti", "ities", "ll", "ist",
)  # fmt: skip
"""Every suffix of the algorithm's rules, plus the inflections that lead to them."""

SHORT_STEM_ALPHABET = "aeiybclstwz"
"""Vowels, y, consonants that matter to the rules (l, s, z for *d; w, y for *o; s, t for -ion)."""

CHAIN_STEMS = (
    "rel", "condit", "hop", "fil", "sp", "geo", "happ", "control", "gener", "sensib", "y", "agr", "call",
)  # fmt: skip
"""Stems that take two suffixes in a row (`relational` + `ly`, `hopefulness` + `es`, ...)."""


def stdlib_words() -> set[str]:
    root = Path(sysconfig.get_paths()["stdlib"])
    words: set[str] = set()
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).parts
        if {"test", "tests", "site-packages", "dist-packages", "idlelib"} & set(parts):
            continue
        words.update(re.findall(r"[a-z]+", path.read_text(encoding="utf-8", errors="replace").lower()))
    return words


def repository_words() -> set[str]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    words: set[str] = set()
    for name in listed.stdout.splitlines():
        path = ROOT / name
        if path.suffix in TEXT_SUFFIXES and path.is_file():
            words.update(re.findall(r"[a-z0-9]+", path.read_text(encoding="utf-8", errors="replace").lower()))
    return words


def synthetic_words() -> set[str]:
    stems = [
        "".join(letters) for length in (1, 2, 3) for letters in itertools.product(SHORT_STEM_ALPHABET, repeat=length)
    ]
    words = {s + suffix for s in stems for suffix in SUFFIXES}
    words.update(s + first + second for s in CHAIN_STEMS for first in SUFFIXES for second in SUFFIXES)
    # Runs of y (consonant/vowel alternation), irregular forms and their neighbours.
    words.update("y" * n + tail for n in range(1, 12) for tail in ("", "s", "ed", "ing", "ies"))
    words.update(["sky", "skies", "dying", "lying", "tying", "news", "innings", "outings", "cannings", "howe"])
    words.update(["proceed", "exceed", "succeed", "proceeding", "exceeded", "succeeds", "dies", "died", "spied"])
    return words


@cache
def word_list() -> list[str]:
    return sorted(stdlib_words() | repository_words() | synthetic_words())


def test_stemmer_equals_nltk_on_a_large_word_list(capsys: pytest.CaptureFixture[str]) -> None:
    nltk_stem = PorterStemmer().stem
    words = word_list()
    mismatches = [(w, nltk_stem(w), stem(w)) for w in words if nltk_stem(w) != stem(w)]
    with capsys.disabled():
        print(f"\nporter: {len(words)} words compared with nltk's PorterStemmer, {len(mismatches)} mismatches")
    assert len(words) > 190_000  # about 201,000
    assert mismatches == []


def test_stemmer_equals_nltk_beyond_rouge_scores_alphabet() -> None:
    # rouge-score hands the stemmer only [a-z0-9]+ tokens; the rest (capitals, non-ASCII letters, an
    # upper-case form whose lower case is longer) is still identical.
    nltk_stem = PorterStemmer().stem
    words = ["Running", "HAPPINESS", "Skies", "naïve", "Привет", "İs", "ﬁles", "x", "", "Ab", "yYy", "caféing"]
    assert [stem(w) for w in words] == [nltk_stem(w) for w in words]


def test_stemmer_examples_of_the_paper_and_of_nltk() -> None:
    # Porter 1980's examples, and NLTK's documented deviations (dies -> die, enjoy stays, geology -> geolog).
    pairs = {
        "caresses": "caress", "ponies": "poni", "ties": "tie", "cats": "cat", "feed": "feed",
        "agreed": "agre", "plastered": "plaster", "motoring": "motor", "sing": "sing", "conflated": "conflat",
        "hopping": "hop", "falling": "fall", "filing": "file", "happy": "happi", "relational": "relat",
        "generalization": "gener", "adoption": "adopt", "controlling": "control", "dies": "die",
        "died": "die", "spied": "spi", "enjoy": "enjoy", "geology": "geolog", "skies": "sky", "dying": "die",
    }  # fmt: skip
    assert {word: stem(word) for word in pairs} == pairs


def sentence_pairs(count: int) -> list[tuple[str, str]]:
    """(reference, prediction) pairs: a random sentence and a perturbed copy (inflected, dropped, swapped,
    recased and repunctuated words), so overlaps are partial; a few empty and punctuation-only sides."""
    rng = random.Random(14)
    vocabulary = [w for w in word_list() if not w.isdigit()]
    pairs: list[tuple[str, str]] = [("", ""), ("", "a b"), ("Hello there", ""), ("...", "!!"), ("ab", "ab")]
    for _ in range(count):
        reference = [rng.choice(vocabulary) for _ in range(rng.randint(1, 25))]
        prediction = []
        for word in reference:
            roll = rng.random()
            if roll < 0.15:
                continue
            if roll < 0.3:
                word = word + rng.choice(("s", "ed", "ing", "ly", "ness", "ation"))
            elif roll < 0.4:
                word = rng.choice(vocabulary)
            elif roll < 0.5:
                word = word.upper()
            prediction.append(word)
        if rng.random() < 0.3:
            rng.shuffle(prediction)
        joiners = (" ", ", ", ". ", " - ", "_", "\n", "! ")
        pairs.append(
            (
                "".join(w + rng.choice(joiners) for w in reference).strip(),
                "".join(w + rng.choice(joiners) for w in prediction).strip(),
            )
        )
    return pairs


def test_rouge1_equals_rouge_score_on_many_sentence_pairs(capsys: pytest.CaptureFixture[str]) -> None:
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    pairs = sentence_pairs(1500)
    differences = []
    for reference, prediction in pairs:
        expected = scorer.score(target=reference, prediction=prediction)["rouge1"]
        actual = rouge1(default_tokens(prediction), default_tokens(reference))
        if (actual.precision, actual.recall, actual.fmeasure) != tuple(expected):
            differences.append((reference, prediction, expected, actual))
    with capsys.disabled():
        print(f"\nrouge1: {len(pairs)} sentence pairs scored against rouge-score, {len(differences)} differ")
    assert differences == []


def test_importing_the_rouge_metrics_imports_neither_nltk_nor_rouge_score() -> None:
    code = (
        "import sys; import evalward.metrics.rouge, evalward.metrics.response, evalward.metrics.adk; "
        "evalward.metrics.rouge.default_tokens('running dogs'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'nltk', 'rouge_score', 'numpy', 'absl'}))"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "[]"
