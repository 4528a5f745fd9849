"""Faithfulness as a guarantee: a stated short answer is something the cited evidence says, or it is declined.

A stated answer is supported when it is one of:

- a **span of a cited sentence** (after SQuAD normalization: case, punctuation, articles); where the reader
  completed a name or a date from another sentence shown ("Collins" -> "Eileen Collins"), that sentence is cited
  too, so the answer is a span of a cited sentence;
- a **value computed from cited operands**: a number equal to a cited number at a scale of a thousand, a million
  or a billion, or rounded from it (an answer "in millions"), and the reader's sums and differences, whose
  operands it cites; a count of a document's labelled parts or of a list's items names every item it counted,
  with its page, in its reason (the items are lines of the document, not sentences of the evidence shown);
- for **choice and yes/no** questions, an option the question names (or yes/no) with cited evidence for it.

Anything else is declined ("Not answerable"), its text kept as the best guess, and the reason says so
(``declined_for`` = "unsupported"). ``unsupported`` is the same check as a count, for any system's answer
(``mmkg eval`` counts unsupported stated answers for every system it scores).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from mmkg.generation.base import Evidence
from mmkg.generation.quantities import NUMBER
from mmkg.generation.sentences import split_sentences
from mmkg.generation.short_answer import NOT_ANSWERABLE, ShortAnswer, Support, normalize

COMPUTED = frozenset({"arithmetic", "parts", "list"})  # values the reader computes from the items it cites
COUNTED = frozenset({"parts", "list"})  # counts whose items the reason lists with their pages
DECIDED = frozenset({"choice", "yes_no"})
_SCALES = (1.0, 1e3, 1e6, 1e9, 1e-3, 1e-6, 1e-9, 100.0, 0.01)


def _values(text: str) -> list[float]:
    out = []
    for m in NUMBER.finditer(text.replace("\u2212", "-")):
        try:
            out.append(float(m.group(0).replace(",", "").replace("$", "").rstrip("%")))
        except ValueError:
            continue
    return out


def _same_number(answer: float, cited: float) -> bool:
    for scale in _SCALES:
        v = cited / scale
        if v == answer:
            return True
        if answer != 0 and abs(v - answer) <= abs(answer) * 0.005:  # rounded from the cited value
            return True
    return False


def spans_in(text: str, sentence: str) -> bool:
    """Whether ``text`` is a span of ``sentence`` after normalization, or, for a number, the same value."""
    key = normalize(text)
    if not key:
        return False
    if f" {key} " in f" {normalize(sentence)} ":
        return True
    nums = _values(text)
    if nums and len(nums) == 1 and re.fullmatch(r"[\W\d.,%$]*\d[\W\d.,%$]*(?:\s*\w{0,12})?", text.strip()):
        return any(_same_number(nums[0], v) for v in _values(sentence))
    return False


def unsupported(text: str, method: str, sentences: Sequence[str], options: Sequence[str] = ()) -> str:
    """Why ``text`` is not supported by ``sentences`` (the cited ones), or "" when it is, or when nothing is stated."""
    if not text or normalize(text) == normalize(NOT_ANSWERABLE):
        return ""
    if method in DECIDED:
        named = [normalize(o) for o in options] + ["yes", "no"]
        if normalize(text) not in named and not any(spans_in(text, s) for s in sentences):
            return f"{text!r} is neither an option the question names nor in a cited sentence"
        return "" if sentences else "no cited evidence decides it"
    if method in COUNTED:
        return ""
    if method in COMPUTED:
        return "" if sentences else "a computed value with no cited operand"
    if any(spans_in(text, s) for s in sentences):
        return ""
    return f"{text!r} is not a span of a cited sentence"


def enforce(reading: ShortAnswer, evidence: Sequence[Evidence], options: Sequence[str] = ()) -> ShortAnswer:
    """``reading`` when its stated answer is supported; with the sentence that spells it cited where another
    sentence shown does; else declined, the answer kept as the best guess."""
    if reading.abstained:
        return reading
    cited = [s.sentence for s in reading.support]
    why = unsupported(reading.text, reading.method, cited, options)
    if not why:
        return reading
    if reading.method not in DECIDED | COMPUTED:
        for ev in evidence:
            if ev.kind != "chunk":
                continue
            for sentence in split_sentences(ev.text):
                if spans_in(reading.text, sentence):
                    sentence = sentence.strip()
                    at = sentence.lower().find(reading.text.lower())
                    extra = Support(ev.label, sentence, at, at + len(reading.text) if at >= 0 else -1, ev.chunk_id,
                                    ev.text.find(sentence))  # fmt: skip
                    return replace(reading, support=[*reading.support, extra])
    return replace(reading, guess=reading.text, text=NOT_ANSWERABLE, abstained=True, declined_for="unsupported",
                   reason=f"declined: {why} (best guess {reading.text!r}: {reading.reason})")  # fmt: skip
