"""ROUGE-1 and the two tokenizers it can run with.

Tokenizers (both lower-case; the stemmer is the Porter stemmer in nltk's extended mode, evalward's own
`evalward.metrics.porter`, applied only to tokens longer than three characters, as rouge-score does):

- `default`: rouge-score 0.1.2's `DefaultTokenizer(use_stemmer=True)`: lower-case, every run of characters
  outside `[a-z0-9]` separates, so text in non-Latin scripts yields no tokens at all.
- `unicode`: google-adk 2.13.0's tokenizer for `response_match_score`:
  1. NFKC-normalise, lower-case;
  2. per character: CJK ideographs (U+4E00–9FFF), Hiragana (U+3040–309F), Katakana (U+30A0–30FF) and
     Hangul syllables (U+AC00–D7AF) are one token each; in Thai (U+0E00–0E7F), Lao (U+0E80–0EFF),
     Khmer (U+1780–17FF) and Myanmar (U+1000–109F) a base character starts a new token and combining
     marks (category M*) attach to it; any other character that `isalnum()` or is a combining mark
     extends the current word; everything else (punctuation, `_`, spaces) separates;
  3. per word: pure ASCII → the `default` tokenizer (stemmed); anything else → one unstemmed token.

ROUGE-1, for prediction tokens p and reference tokens r:
    overlap = Σ_w min(count_r(w), count_p(w))
    P = overlap / max(|p|, 1),  R = overlap / max(|r|, 1),  F = 2·P·R / (P + R), 0 when P + R = 0
computed with the same float operations as rouge-score, so scores are bit-identical to it.

Neither rouge-score nor nltk is imported: they cost about a second and 100 MB at start-up (issue #14).
tests/metrics/test_porter.py proves the stemmer identical to nltk's and the scores identical to
rouge-score's `RougeScorer(["rouge1"], use_stemmer=True)`.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from evalward.metrics import porter

TokenizerName = Literal["default", "unicode"]
TOKENIZERS: tuple[TokenizerName, ...] = ("default", "unicode")

_ASCII_WORD = re.compile(r"[a-z0-9]+")
_MIN_STEM_LENGTH = 4
"""rouge-score stems only tokens longer than three characters."""


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Porter stem of a lower-case ASCII word; words of three characters or fewer stay as they are.

    Cached: stemming is deterministic and by far the slowest step of scoring.
    """
    if len(word) < _MIN_STEM_LENGTH:
        return word
    return porter.stem(word)


def _ascii_tokens(lowered: str, out: list[str]) -> None:
    """Append rouge-score's tokens for already lower-cased text: `[a-z0-9]` runs, stemmed."""
    for word in _ASCII_WORD.findall(lowered):
        token = stem(word)
        # rouge-score drops tokens that are not `[a-z0-9]+` after stemming; the stemmer keeps ASCII
        # letters and digits, so this only guards against an empty stem.
        if token:
            out.append(token)


def default_tokens(text: str) -> list[str]:
    """rouge-score's `DefaultTokenizer(use_stemmer=True)`: characters outside `[a-z0-9]` are dropped."""
    tokens: list[str] = []
    _ascii_tokens(text.lower(), tokens)
    return tokens


def _is_cjk(code: int) -> bool:
    return 0x4E00 <= code <= 0x9FFF or 0x3040 <= code <= 0x30FF or 0xAC00 <= code <= 0xD7AF


def _is_non_spaced(code: int) -> bool:
    return 0x0E00 <= code <= 0x0EFF or 0x1780 <= code <= 0x17FF or 0x1000 <= code <= 0x109F


def _is_mark(char: str) -> bool:
    return unicodedata.category(char).startswith("M")


def unicode_tokens(text: str) -> list[str]:
    """google-adk 2.13.0's Unicode-aware tokenizer (see the module docstring for the rules)."""
    if text.isascii():
        # NFKC leaves ASCII unchanged and every ASCII word is handled by the default tokenizer,
        # so pure-ASCII text tokenizes exactly as `default` does.
        return default_tokens(text)
    lowered = unicodedata.normalize("NFKC", text).lower()
    words: list[str] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            words.append("".join(current))
            current.clear()

    for char in lowered:
        code = ord(char)
        if _is_cjk(code):
            flush()
            words.append(char)
        elif _is_non_spaced(code):
            if not _is_mark(char):
                # A base character starts a new cluster; marks that follow attach to it.
                flush()
            current.append(char)
        elif char.isalnum() or _is_mark(char):
            current.append(char)
        else:
            flush()
    flush()

    tokens: list[str] = []
    for word in words:
        if word.isascii():
            _ascii_tokens(word, tokens)
        else:
            tokens.append(word)
    return tokens


def tokenize(text: str, tokenizer: TokenizerName) -> list[str]:
    """Tokens of `text` under the named tokenizer."""
    return unicode_tokens(text) if tokenizer == "unicode" else default_tokens(text)


@dataclass(frozen=True)
class Rouge1:
    """ROUGE-1 counts and scores for one prediction against one reference."""

    overlap: int
    prediction_count: int
    reference_count: int
    precision: float
    recall: float
    fmeasure: float

    def explain(self) -> str:
        """`overlap=3, P=3/4=0.750, R=3/5=0.600, F=0.667`: enough to recompute every number."""
        return (
            f"overlap={self.overlap}, "
            f"P={self.overlap}/{self.prediction_count}={self.precision:.3f}, "
            f"R={self.overlap}/{self.reference_count}={self.recall:.3f}, "
            f"F={self.fmeasure:.3f}"
        )


def rouge1(prediction: list[str], reference: list[str]) -> Rouge1:
    """ROUGE-1 of `prediction` tokens against `reference` tokens (formula in the module docstring).

    Empty sides follow rouge-score: a zero count divides as 1, so an empty side gives P = R = F = 0.
    """
    reference_counts = Counter(reference)
    prediction_counts = Counter(prediction)
    overlap = 0
    for token, count in reference_counts.items():
        other = prediction_counts.get(token, 0)
        overlap += count if count < other else other
    # The same operations, in the same order, as rouge-score, so the floats are bit-identical.
    precision = overlap / max(len(prediction), 1)
    recall = overlap / max(len(reference), 1)
    fmeasure = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return Rouge1(
        overlap=overlap,
        prediction_count=len(prediction),
        reference_count=len(reference),
        precision=precision,
        recall=recall,
        fmeasure=fmeasure,
    )
