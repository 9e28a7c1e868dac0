"""The Porter stemmer with NLTK's extensions: the stemmer rouge-score (and so ADK's `response_match_score`)
uses, without importing nltk.

Written from M. F. Porter, "An algorithm for suffix stripping", *Program* 14(3), 1980, plus the deviations
NLTK documents for `PorterStemmer(mode=NLTK_EXTENSIONS)`, its default (nltk 3.10.4), so that
`stem(w) == nltk.stem.porter.PorterStemmer().stem(w)` for every string `w`
(tests/metrics/test_porter.py checks this on a large word list).

Definitions (Porter §2). A *consonant* is a letter other than a, e, i, o, u, and other than a `y` that
follows a consonant (a `y` at the start of a word is a consonant). With c a consonant and v a vowel, every
word has the form [C](VC)^m[V]; m is its *measure* (m("tree") = 0, m("trouble") = 1, m("private") = 2).
Conditions: `*v*` the stem contains a vowel; `*d` it ends in a double consonant; `*o` it ends
consonant-vowel-consonant where the last consonant is not w, x or y.

The steps, each applying at most one rule (the first rule, in the order listed, whose suffix ends the
word; if that rule's condition fails the step leaves the word alone):

1a. sses → ss; ies → i; ss → ss; s → (nothing).
1b. (m > 0) eed → ee; (*v*) ed → ; (*v*) ing → ; when ed or ing was removed: at → ate, bl → ble,
    iz → ize; else (*d, not l/s/z) drop the last letter; else (m = 1 and *o) add e.
1c. y → i.
2.  (m > 0) ational → ate, tional → tion, enci → ence, anci → ance, izer → ize, bli → ble, alli → al,
    entli → ent, eli → e, ousli → ous, ization → ize, ation → ate, ator → ate, alism → al,
    iveness → ive, fulness → ful, ousness → ous, aliti → al, iviti → ive, biliti → ble, fulli → ful,
    logi → log.
3.  (m > 0) icate → ic, ative → , alize → al, iciti → ic, ical → ic, ful → , ness → .
4.  (m > 1) al, ance, ence, er, ic, able, ible, ant, ement, ment, ent, ion (only after s or t), ou, ism,
    ate, iti, ous, ive, ize → (nothing).
5a. (m > 1) e → ; (m = 1 and not *o) e → .
5b. (m > 1, measured with one l) ll → l.

NLTK's extensions, as documented in its source:
- input is lower-cased; a table of irregular forms is looked up first (skies, sky → sky; dying → die;
  lying → lie; tying → tie; news → news; innings → inning; outings → outing; cannings → canning;
  inning, outing, canning, howe, proceed, exceed, succeed stay as they are);
- words of one or two characters are returned unchanged;
- *o also holds for a two-letter stem vowel-consonant;
- 1a: a four-letter word ending in ies → ie (dies → die);
- 1b: ied → ie in a four-letter word, → i otherwise, and the step ends there (died → die, spied → spi);
- 1c: y → i only when the letter before y is a consonant that is not the word's first letter
  (happy → happi, enjoy → enjoy, spy → spi);
- 2: alli → al is tried first and, when it applies, step 2 runs again on the result; bli → ble replaces
  the paper's abli → able; fulli → ful and logi → log are added, logi's condition measuring the stem
  with its l (geologi → geolog).

Only the standard library, and not much of it: importing this module is cheap.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["stem"]

_VOWELS = frozenset("aeiou")

_IRREGULAR: dict[str, str] = {
    "skies": "sky",
    "sky": "sky",
    "dying": "die",
    "lying": "lie",
    "tying": "tie",
    "news": "news",
    "innings": "inning",
    "inning": "inning",
    "outings": "outing",
    "outing": "outing",
    "cannings": "canning",
    "canning": "canning",
    "howe": "howe",
    "proceed": "proceed",
    "exceed": "exceed",
    "succeed": "succeed",
}
"""NLTK's irregular forms: looked up before any rule, the value is the stem."""

_STEP2: tuple[tuple[str, str], ...] = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("bli", "ble"),
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
    ("fulli", "ful"),
    ("logi", "log"),
)

_STEP3: tuple[tuple[str, str], ...] = (
    ("icate", "ic"),
    ("ative", ""),
    ("alize", "al"),
    ("iciti", "ic"),
    ("ical", "ic"),
    ("ful", ""),
    ("ness", ""),
)

_STEP4: tuple[tuple[str, str], ...] = tuple(
    (suffix, "")
    for suffix in (
        "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou", "ism",
        "ate", "iti", "ous", "ive", "ize",
    )
)  # fmt: skip


def _consonant_flags(word: str) -> list[bool]:
    """`flags[i]` is True when `word[i]` is a consonant (a `y` is one unless a consonant precedes it)."""
    flags: list[bool] = []
    previous = False  # a `y` at the start counts as following a vowel, i.e. it is a consonant
    for char in word:
        if char in _VOWELS:
            previous = False
        elif char == "y":
            previous = not previous if flags else True
        else:
            previous = True
        flags.append(previous)
    return flags


def _measure(word: str) -> int:
    """m in [C](VC)^m[V]: the number of places where a vowel is followed by a consonant."""
    count = 0
    after_vowel = False
    for consonant in _consonant_flags(word):
        if consonant and after_vowel:
            count += 1
        after_vowel = not consonant
    return count


def _has_vowel(word: str) -> bool:
    """Condition *v*."""
    return not all(_consonant_flags(word))


def _ends_double_consonant(word: str) -> bool:
    """Condition *d."""
    return len(word) >= 2 and word[-1] == word[-2] and _consonant_flags(word)[-1]


def _ends_cvc(word: str) -> bool:
    """Condition *o, with NLTK's two-letter case (vowel, consonant)."""
    if len(word) >= 3:
        flags = _consonant_flags(word)
        if flags[-3] and not flags[-2] and flags[-1] and word[-1] not in "wxy":
            return True
    if len(word) == 2:
        flags = _consonant_flags(word)
        return not flags[0] and flags[1]
    return False


def _first_rule(word: str, rules: tuple[tuple[str, str], ...], accept: Callable[[str, str], bool]) -> str:
    """Apply the first rule whose suffix ends `word`, if `accept(stem, suffix)`; only that rule is tried."""
    for suffix, replacement in rules:
        if word.endswith(suffix):
            base = word[: len(word) - len(suffix)]
            return base + replacement if accept(base, suffix) else word
    return word


def _step1a(word: str) -> str:
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("ies"):
        return word[:-1] if len(word) == 4 else word[:-2]
    if word.endswith("ss"):
        return word
    if word.endswith("s"):
        return word[:-1]
    return word


def _step1b(word: str) -> str:
    if word.endswith("ied"):
        return word[:-1] if len(word) == 4 else word[:-2]
    if word.endswith("eed"):
        return word[:-1] if _measure(word[:-3]) > 0 else word
    if word.endswith("ed") and _has_vowel(word[:-2]):
        base = word[:-2]
    elif word.endswith("ing") and _has_vowel(word[:-3]):
        base = word[:-3]
    else:
        return word
    if base.endswith(("at", "bl", "iz")):
        return base + "e"
    if _ends_double_consonant(base):
        return base if base[-1] in "lsz" else base[:-1]
    if _measure(base) == 1 and _ends_cvc(base):
        return base + "e"
    return base


def _step1c(word: str) -> str:
    if word.endswith("y") and len(word) > 2 and _consonant_flags(word[:-1])[-1]:
        return word[:-1] + "i"
    return word


def _step2(word: str) -> str:
    if word.endswith("alli") and _measure(word[:-4]) > 0:
        return _step2(word[:-2])

    def accept(base: str, suffix: str) -> bool:
        return _measure(base + "l" if suffix == "logi" else base) > 0

    return _first_rule(word, _STEP2, accept)


def _step3(word: str) -> str:
    return _first_rule(word, _STEP3, lambda base, _suffix: _measure(base) > 0)


def _step4(word: str) -> str:
    def accept(base: str, suffix: str) -> bool:
        return _measure(base) > 1 and (suffix != "ion" or base[-1] in "st")

    return _first_rule(word, _STEP4, accept)


def _step5a(word: str) -> str:
    if word.endswith("e"):
        base = word[:-1]
        measure = _measure(base)
        if measure > 1 or (measure == 1 and not _ends_cvc(base)):
            return base
    return word


def _step5b(word: str) -> str:
    if word.endswith("ll") and _measure(word[:-1]) > 1:
        return word[:-1]
    return word


def stem(word: str) -> str:
    """The Porter stem of `word` (lower-cased first), in NLTK's extended mode; see the module docstring.

    `stem("running") == "run"`, `stem("happiness") == "happi"`, `stem("dies") == "die"`.
    """
    lowered = word.lower()
    irregular = _IRREGULAR.get(lowered)
    if irregular is not None:
        return irregular
    if len(word) <= 2:
        return lowered
    result = _step1a(lowered)
    result = _step1b(result)
    result = _step1c(result)
    result = _step2(result)
    result = _step3(result)
    result = _step4(result)
    result = _step5a(result)
    return _step5b(result)
