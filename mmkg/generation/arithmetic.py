"""Questions answered by arithmetic over two values the evidence states: a difference ("How much higher is the
accuracy of A compared to B on X?", "the gap between A and B"), a sum ("the total percentage of A and B") or a
change between two years ("the percentage change of X from 2016 to 2017").

``operation(question)`` rewrites such a question as the two questions whose values it combines ("What is the
accuracy of A on X?", "What is the accuracy of B on X?"); the answer path retrieves and reads each as a number
question of its own, and ``combine`` gives the answer. The rewriting follows the question's wording: the
value asked for (the words before the first operand) and what qualifies both (the words after the second)
are shared, and the second operand stands where the first did, replacing the first's last name ("GPT-4 on
SituatedQA compared to MMLU Chemistry" compares SituatedQA with MMLU Chemistry, GPT-4's on both).

Hand-written: the patterns are English comparison and aggregation phrasing, the same for any corpus; no
maintained library rewrites them without a trained model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ORDER = r"higher|lower|more|less|greater|smaller|larger|bigger|longer|shorter|fewer"
_DIFFERENCE = re.compile(
    rf"^(?P<lead>[^,?]*,\s+)?(?:by\s+)?how\s+much\s+(?:{_ORDER})\s+(?:is|was|are|were|does|did|do)\s+(?P<a>.+?)\s+"
    r"(?:compared\s+(?:to|with)|than|over|versus|vs\.?)\s+(?P<b>.+?)\s*[?.]?$",
    re.IGNORECASE,
)  # fmt: skip
_GAP = re.compile(
    r"^(?P<lead>[^,?]*,\s+)?(?:what|how\s+much)\s+(?:is|was|are|were)\s+the\s+(?:\w+\s+)?(?:gap|difference)\s+(?:in\s+(?P<what>.+?)\s+)?"
    r"between\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s*[?.]?$",
    re.IGNORECASE,
)  # fmt: skip
_SUM = re.compile(
    r"^(?P<lead>[^,?]*,\s+)?what\s+(?:is|was|are|were)\s+the\s+(?:sum|total|combined)\s+(?:(?P<what>\w+)\s+)?of\s+(?P<a>.+?)\s+"
    r"(?:and|plus)\s+(?P<b>.+?)\s*[?.]?$",
    re.IGNORECASE,
)  # fmt: skip
_CHANGE = re.compile(
    r"^(?:what\s+(?:is|was)\s+the\s+)?(?:(?P<pct>percentage|percent)\s+)?(?:change|growth|increase|decrease)\s+"
    r"(?:of|in)\s+(?P<x>.+?)\s+from\s+(?P<y1>(?:19|20)\d{2})\s+to\s+(?P<y2>(?:19|20)\d{2})\s*[?.]?$"
    r"|^(?:by\s+)?(?:how\s+much|what\s+(?P<pct2>percentage|percent))\s+did\s+(?P<x2>.+?)\s+"
    r"(?:increase|decrease|grow|change|rise|fall|drop|decline)\s+from\s+(?P<y3>(?:19|20)\d{2})\s+to\s+"
    r"(?P<y4>(?:19|20)\d{2})\s*[?.]?$",
    re.IGNORECASE,
)  # fmt: skip
# the last name of a phrase: a run of capitalized, numbered or quoted words, with "+", "-", "&" between
_NAME_RUN = re.compile(r"(?:[`\"'“][^`\"'”]+[`\"'”]|(?:[A-Z][\w.-]*)(?:\s*(?:[+&-]|\s)\s*[A-Z0-9][\w.-]*)*)")
# where a phrase's qualifier opens: "PaLM-2L on TimeQA" -> "PaLM-2L", "on TimeQA"
_QUALIFIER = re.compile(r"\s+(?=(?:on|in|for|at|of|during|among|within|from|by|with|who|whose|that)\s)",
                        re.IGNORECASE)  # fmt: skip
_PREPOSITION = re.compile(r"(on|in|for|at|during|among|within|from|by|with)\s", re.IGNORECASE)
_LEAD = re.compile(r"^(?:the\s+)?", re.IGNORECASE)


@dataclass(frozen=True)
class Operation:
    """What to compute and the two questions whose values it takes, in order."""

    kind: str  # "difference" (first minus second, as an absolute gap), "sum", "change" (second against first)
    questions: tuple[str, str]
    percent_change: bool = False  # "change" as a percentage of the first value


def operation(question: str) -> Operation | None:
    """The arithmetic a question asks for and the two value questions it combines, or None."""
    text = " ".join(question.split())
    m = _CHANGE.search(text)
    if m is not None:
        x = m.group("x") or m.group("x2")
        y1, y2 = (m.group("y1"), m.group("y2")) if m.group("x") else (m.group("y3"), m.group("y4"))
        pct = bool(m.group("pct") or m.group("pct2"))
        return Operation("change", (f"What is {x} in {y1}?", f"What is {x} in {y2}?"), pct)
    for kind, pattern in (("difference", _DIFFERENCE), ("difference", _GAP), ("sum", _SUM)):
        m = pattern.search(text)
        if m is None:
            continue
        what = (m.groupdict().get("what") or "").strip()
        a, b = m.group("a").strip(), m.group("b").strip()
        pair = _pair(a, b, what)
        if pair is not None:
            lead = m.group("lead") or ""  # "In the error analysis, what is ...": the setting of both values
            return Operation(kind, (f"{lead}w{pair[0][1:]}", f"{lead}w{pair[1][1:]}") if lead else pair)
    return None


def _pair(a: str, b: str, what: str) -> tuple[str, str] | None:
    """The two value questions of "A ... and B": A's phrase with B's qualifier, and A's phrase with its last name
    replaced by B's head ("the accuracy of PaLM-2L + RAG" / "PaLM-2L on TimeQA" -> "the accuracy of PaLM-2L
    on TimeQA")."""
    if re.match(r"(?:the|a|an)\s", b, re.IGNORECASE) and re.match(r"(?:the|a|an)\s", a, re.IGNORECASE):
        return _ask(a, b, what)  # "between the percentage of X and the percentage of Y": both written in full
    prep = _PREPOSITION.match(b)
    if prep is not None and f" {prep.group(1).lower()} " in f" {a.lower()} ":
        # "the punctuality of Nordline in 2018 than in 2019": B replaces A's phrase of the same preposition
        at = f" {a.lower()} ".rindex(f" {prep.group(1).lower()} ")
        second = f"{a[:at].rstrip()} {b}".strip()
        return _ask(a, second, what)
    parts = _QUALIFIER.split(b, maxsplit=1)
    head, tail = parts[0].strip(), (parts[1].strip() if len(parts) > 1 else "")
    names = list(_NAME_RUN.finditer(a))
    if names:  # B stands where A's last name stood
        last = names[-1]
        second = f"{a[: last.start()]}{head}{a[last.end():]}"
    else:  # no name in A: B is the same kind of thing, written in full
        second = head
    first = a
    if tail:
        first, second = f"{first} {tail}", f"{second} {tail}"
    if not head:
        return None
    return _ask(first, second, what)


def _ask(first: str, second: str, what: str) -> tuple[str, str] | None:
    """The two value questions, with the measured quantity ("in accuracy") put before each phrase."""
    if what:
        first, second = f"the {what} of {_LEAD.sub('', first)}", f"the {what} of {_LEAD.sub('', second)}"
    if first.strip() == second.strip():
        return None
    return f"What is {first}?", f"What is {second}?"


def combine(op: Operation, values: tuple[float, float]) -> float | None:
    """The answer from the two values, or None where it is undefined (a change from zero)."""
    first, second = values
    if op.kind == "sum":
        return first + second
    if op.kind == "difference":
        return abs(first - second)
    if op.percent_change:
        return None if first == 0 else (second - first) / abs(first) * 100.0
    return second - first
