"""What every stage of reading speaks in: the short answer, the sentences that support it, its candidates and the
graph path, and how an answer is declined.

The rule reader (``reader``), the model reader (``model_reader``), the span model (``span_model``), the faithfulness
check (``support``) and the eval all read and write these; they live apart from any one stage so that none has to
import another to name them.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

NOT_ANSWERABLE = "Not answerable"


@dataclass(frozen=True)
class Support:
    """A sentence that supports the answer, the answer's span in it, and where the sentence is in its evidence."""

    label: int  # the evidence number, as cited: [label]
    sentence: str
    start: int  # the answer's span in ``sentence`` (character offsets; -1 when the sentence does not spell it)
    end: int
    chunk_id: str = ""
    offset: int = -1  # where ``sentence`` starts in the evidence text shown


@dataclass(frozen=True)
class PathStep:
    """One edge of the graph path from the question's entity to the answer."""

    subject: str
    predicate: str
    object: str
    sentence: str
    label: int | None = None  # the evidence number of the edge's sentence, when it was shown
    source: str = "relation"  # relation: a triple of the graph; mention: both named in one sentence


@dataclass(frozen=True)
class Candidate:
    text: str
    label: str  # the NER label, or NUMBER / IDENT / TITLE for spans found by pattern
    score: float
    evidence: int
    sentence: str
    start: int
    end: int
    features: dict[str, float] = field(default_factory=dict, compare=False)


@dataclass
class ShortAnswer:
    """The reader's answer: short text, confidence, support, path, and the candidates it chose among."""

    text: str
    answer_type: str
    confidence: float
    abstained: bool = False
    guess: str = ""  # the best candidate when the reader declined to answer
    method: str = ""  # span | choice | yes_no | arithmetic | parts | list | lookup | label | row | definition |
    # superlative | none
    support: list[Support] = field(default_factory=list)
    path: list[PathStep] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    reason: str = ""  # in words: why this answer (or why none)
    latency_ms: float = 0.0  # question analysis and reading
    coverage: float = 1.0  # share of the question's own words the evidence holds (span answers scale by it)
    declined_for: str = ""  # why it declined: "confidence", or what the evidence lacks (a name, the page pointed at)
    model: str = ""  # the language model that chose the answer among the candidates, when one read them

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def normalize(text: str) -> str:
    """SQuAD-style normalization: lower case, no punctuation, no articles, single spaces."""
    text = re.sub(r"[^\w\s]", " ", text.lower())
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def below(confidence: float, threshold: float) -> str:
    """"confidence 0.29 is below 0.36", with a third decimal where two would print the same number twice ("0.359
    is below 0.364", not "0.36 is below 0.36")."""
    digits = 2 if f"{confidence:.2f}" != f"{threshold:.2f}" else 3
    return f"confidence {confidence:.{digits}f} is below {threshold:.{digits}f}"


def decline(ans: ShortAnswer, why: str, keep_confidence: bool = False) -> None:
    """Turns ``ans`` into "Not answerable" in place, saying why; its text stays as the best guess, with the reason
    that made it the best, so a person can still check the guess ("declined: confidence 0.09 is below 0.25 (best
    guess 'Edmonton': the best-scored place of Jocelyn Lovell, the husband the question names, ...)")."""
    guess, because = ans.text, ans.reason
    ans.guess, ans.text, ans.abstained = guess, NOT_ANSWERABLE, True
    ans.declined_for = "confidence" if keep_confidence else why
    if not keep_confidence:
        ans.confidence = 0.0
    ans.reason = f"declined: {why} (best guess {guess!r}: {because})" if because else \
        f"declined: {why} (best guess {guess!r})"


def bare_title(title: str) -> str:
    """A page title without its parenthesized qualifier: "James Young (director)" -> "James Young"."""
    return re.sub(r"\s*\([^)]*\)\s*$", "", title).strip()
