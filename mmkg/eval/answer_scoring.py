"""MMLongBench-Doc's rule-based answer scoring by answer format, and a rule-based short-answer extractor.

Scoring follows the benchmark's ``eval/eval_score.py`` rule for rule (written here from its
description, not copied), so our accuracy is comparable with published figures:

- ``Int``: the prediction, read as a number and truncated, equals the gold integer.
- ``Float``: gold and prediction (after ``clean``) are within 1% relative, or equal when rounded to
  the shorter precision (at least 2 places), trying gold, gold/100 and gold*100 (a percentage
  written either way).
- ``Str`` and ``None``: after ``clean``, exact equality for strings that must match exactly (URLs,
  file names, "page ..." , phone numbers, times, dates, e-mail addresses), else ANLS: 1 − normalized
  Levenshtein distance, 0 when at or below 0.5. An unanswerable question's gold is "Not answerable".
- ``List``: same length required; items cleaned and sorted; numeric or exact-match items must all be
  equal, otherwise the score is the minimum ANLS over aligned items.

Accuracy is the mean score; F1 combines recall over answerable questions with precision over the
questions the system did not declare unanswerable, as the benchmark does. One deviation: gold and
predicted lists are parsed with ``ast.literal_eval`` (the benchmark calls ``eval``); a prediction that
is not a valid literal stays one string. The benchmark's cleaning also tries to strip "mile(s)" and
"million" suffixes but discards the result, so it has no effect; we keep that behaviour (no stripping)
to stay comparable.

The benchmark extracts a short answer from a model's free text with an LLM (GPT-4o) before scoring.
With no LLM here, ``extract_short_answer`` does it by rules: the question's wording decides the form
("how many" → an integer, "what percentage / how much / ratio" → a number, "which year / when" → a
year), a response that declares no answer becomes "Not answerable", and anything else is scored as
the response's first sentence. It reads the question, never the gold answer or its format.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from rapidfuzz.distance import Levenshtein

NOT_ANSWERABLE = "Not answerable"
FORMATS = ("Str", "Int", "Float", "List", "None")

_EXACT = (
    re.compile(r"\b\d+(-\d+|\s\d+)?\b"),  # phone numbers and plain integers
    re.compile(r"\b\d{4}[-\s]\d{2}[-\s]\d{2}\b"),  # YYYY-MM-DD
    re.compile(r"\b\d{4}[-\s]\d{2}\b"),  # YYYY-MM
    re.compile(r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}"),  # e-mail
)


def clean(value: object) -> str:
    """Lower case, no parenthesized asides, no surrounding quotes, no leading "$" or trailing "%"."""
    s = str(value).lower().strip()
    s = re.sub(r"\s*\([^)]*\)", "", s).strip()
    s = re.sub(r"^['\"]|['\"]$", "", s).strip()
    return s.lstrip("$").strip().rstrip("%").strip()


def must_match_exactly(s: str) -> bool:
    """Strings that a near miss does not answer: URLs, code files, page names, numbers, times, dates, e-mails."""
    if "https://" in s or s.endswith((".py", "ipynb")) or s.startswith("page") or "a.m." in s or "p.m." in s:
        return True
    return any(p.fullmatch(s) for p in _EXACT)


def anls(gold: str, pred: str, threshold: float = 0.5) -> float:
    """Average normalized Levenshtein similarity of one pair, cut to 0 at or below ``threshold``."""
    length = max(len(gold), len(pred))
    value = 1.0 - (Levenshtein.distance(gold, pred) / length if length else 0.0)
    return 0.0 if value <= threshold else value


def _is_float(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _precision(x: float) -> int:
    text = str(x)
    return len(text.split(".")[-1]) if "." in text else 3


def float_equal(gold: float, pred: float) -> bool:
    """Within 1% relative, or equal at the shorter precision (≥ 2), for gold as written, /100 or ×100."""
    for g in (gold / 100, gold, gold * 100):
        if math.isclose(g, pred, rel_tol=0.01):
            return True
        places = max(min(_precision(pred), _precision(g)), 2)
        if round(pred, places) == round(g, places):
            return True
    return False


def _as_list(value: object) -> list[object]:
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            parsed = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            return [value]
        return list(parsed) if isinstance(parsed, list | tuple) else [parsed]
    return list(value) if isinstance(value, list | tuple) else [value]


def score(gold: object, pred: object, answer_format: str) -> float:
    """The benchmark's score of one prediction, 0..1, by the gold answer's format."""
    if answer_format not in FORMATS:
        raise ValueError(f"unknown answer format {answer_format!r}; MMLongBench-Doc has {list(FORMATS)}")
    if answer_format == "Int":
        try:
            return float(int(str(gold)) == int(float(str(pred))))
        except (ValueError, OverflowError):
            return 0.0
    if answer_format == "Float":
        try:
            g, p = float(clean(gold)), float(clean(pred))
        except ValueError:
            return 0.0
        return float(float_equal(g, p))
    if answer_format in ("Str", "None"):
        g, p = clean(gold), clean(pred)
        return float(g == p) if must_match_exactly(g) else anls(g, p)
    golds, preds = _as_list(gold), _as_list(pred)
    if len(golds) != len(preds):
        return 0.0
    gs, ps = sorted(clean(x) for x in golds), sorted(clean(x) for x in preds)
    if _is_float(gs[0]) or must_match_exactly(gs[0]):
        return float("-".join(gs) == "-".join(ps))
    return min(anls(g, p) for g, p in zip(gs, ps, strict=True))


@dataclass(frozen=True)
class Scored:
    question_id: str
    gold: str
    pred: str
    answer_format: str
    score: float


def accuracy_and_f1(rows: Iterable[Scored]) -> tuple[float, float]:
    """Mean score, and the benchmark's F1 (recall over answerable gold, precision over answered predictions)."""
    rows = list(rows)
    if not rows:
        return 0.0, 0.0
    acc = sum(r.score for r in rows) / len(rows)
    answerable = [r for r in rows if r.gold != NOT_ANSWERABLE]
    answered = [r for r in rows if r.pred != NOT_ANSWERABLE]
    if not answerable or not answered:
        return acc, 0.0
    hits = sum(r.score for r in answerable)
    recall, precision = hits / len(answerable), hits / len(answered)
    return acc, (2 * recall * precision / (recall + precision) if recall + precision else 0.0)


# -- short answers from free text, by rules (the benchmark uses an LLM for this step) -------------------------

_NUMBER = re.compile(r"(?<![\w.])[-+]?\$?\d{1,3}(?:,\d{3})+(?:\.\d+)?%?|(?<![\w.])[-+]?\$?\d+(?:\.\d+)?%?")
_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven")
_WORDS = {w: i for i, w in enumerate(_NUMBER_WORDS)}
_NO_ANSWER = re.compile(r"not answerable|cannot be (?:answered|determined)|no (?:answer|sentence to answer)|"
                        r"does not (?:say|mention|state)|not (?:mentioned|stated|provided)", re.IGNORECASE)  # fmt: skip
_MARKER = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")


def _numbers(text: str, percent_first: bool = False) -> list[str]:
    """Numbers in the text, years last (a year is rarely the quantity asked for); percentages first if asked."""
    found = [m.group(0).replace(",", "") for m in _NUMBER.finditer(text)]
    found.sort(key=lambda n: (bool(_YEAR.fullmatch(n)), percent_first and not n.endswith("%")))
    return [n.lstrip("+$").rstrip("%").replace("$", "") for n in found]


def extract_short_answer(question: str, response: str) -> str:
    """A short answer from a free-text response, by the question's wording; "Not answerable" when it declines."""
    text = _MARKER.sub("", response.split(": ", 1)[1] if response.startswith("Extractive answer") else response)
    text = text.strip()
    if not text or _NO_ANSWER.search(text):
        return NOT_ANSWERABLE
    q = question.lower()
    if re.search(r"\bhow many\b|\bnumber of\b|\bcount\b", q):
        nums = [n for n in _numbers(text) if re.fullmatch(r"[-+]?\d+", n) and not _YEAR.fullmatch(n)]
        if nums:
            return nums[0]
        words = [_WORDS[w] for w in re.findall(r"[a-z]+", text.lower()) if w in _WORDS]
        if words:
            return str(words[0])
    if re.search(r"\bwhich year\b|\bwhat year\b|\bwhen\b", q):
        years = _YEAR.findall(text)
        if years:
            return years[0]
    if re.search(r"percent|percentage|\bratio\b|\brate\b|how much|\baverage\b|\btotal\b", q):
        nums = _numbers(text, percent_first=True)
        if nums:
            return nums[0]
    return re.split(r"(?<=[.!?])\s+", text)[0].rstrip(".")
