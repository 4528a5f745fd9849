"""Confidence that means what it says: a candidate's features become the probability that it is right, and that
probability becomes a confidence that holds on questions not fitted (0.8: right about 80 % of the time).

Two maps, both fitted on dev questions only (``benchmarks/reader_fit.py``, from the candidates
``benchmarks/reader_candidates.py`` dumps) and shipped as ``calibration.json`` beside this module:

- **candidate**: logistic regression over a candidate's features (the model's log-likelihoods, the reader's score
  and rank, the sentence's rank, the span's kind): which candidate to state. The reader states the most probable.
- **chosen**: isotonic regression of the chosen candidate's probability against whether it was right: the
  confidence shown. (The most probable of several candidates is right less often than its own probability says:
  the maximum is biased upward; this second fit removes that.)
- **rules**: for the answers the reader computes without the model (choice, yes/no, counts, arithmetic, keyed
  lookups), isotonic regression of the reader's own confidence, one map per method family.

``threshold`` is the confidence below which a stated answer is declined (shown as a best guess instead), chosen on
dev as the lowest that keeps the answered questions' precision at 0.80 or more.

``Calibration.decide`` is the policy itself: which answer is stated, at what confidence, or declined. ``mmkg ask``
(``mmkg.generation.reading``) and the fit (``benchmarks/reader_fit.py``, on dumped candidates) both call it, so
the threshold is chosen for the decisions the reader makes.

Hand-written inference (a dot product and ``numpy.interp``) rather than pickled scikit-learn objects: the file is
plain JSON a person can read and diff, and loading it needs no scikit-learn version match. Fitting uses
scikit-learn (``fit_logistic``, ``fit_isotonic``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from mmkg.generation.short_answer import ShortAnswer

DEFAULT_PATH = Path(__file__).with_name("calibration.json")
#: the method families of the reader's computed answers, each with a confidence map of its own
RULE_FAMILIES = {"choice": "choice", "yes_no": "yes_no", "arithmetic": "computed", "parts": "computed",
                 "list": "computed", "lookup": "keyed", "label": "keyed", "row": "keyed", "definition": "keyed",
                 "superlative": "keyed", "span": "span"}  # fmt: skip
# ("span": a span answer no model read, a two-hop one under the span reader; a calibration without the map keeps
# the reader's own confidence for it)


@dataclass
class Logistic:
    names: list[str]
    coef: list[float]
    intercept: float
    mean: list[float]
    scale: list[float]

    def logit(self, features: Mapping[str, float]) -> float:
        z = self.intercept
        for name, c, m, s in zip(self.names, self.coef, self.mean, self.scale, strict=True):
            z += c * (float(features.get(name, 0.0)) - m) / s
        return z

    def prob(self, features: Mapping[str, float]) -> float:
        z = self.logit(features)
        return 1.0 / (1.0 + math.exp(-z)) if z > -60 else 0.0


@dataclass
class Isotonic:
    x: list[float]
    y: list[float]

    def __call__(self, p: float) -> float:
        if not self.x:
            return p
        return float(np.interp(p, self.x, self.y))


@dataclass(frozen=True)
class RuleAnswer:
    """What the policy needs of the rule reader's answer."""

    method: str  # the reader's method: span, choice, yes_no, arithmetic, lookup, ...
    confidence: float  # the reader's own confidence
    abstained: bool
    declined_for: str  # "" (stated), "confidence", or what the evidence lacks (a name, the page pointed at)
    has_text: bool  # an answer to state: its own, or its best guess when it declined

    @classmethod
    def of(cls, ans: ShortAnswer) -> RuleAnswer:
        return cls(ans.method, ans.confidence, ans.abstained, ans.declined_for,
                   bool(ans.guess if ans.abstained else ans.text))  # fmt: skip


@dataclass(frozen=True)
class Decision:
    """The policy's decision: the model's candidate (an index into the options) or the rule reader's answer, its
    calibrated confidence, and whether it is stated; ``hard`` when it is declined whatever the confidence."""

    option: int | None
    confidence: float
    stated: bool
    hard: bool = False


@dataclass
class Calibration:
    candidate: Logistic
    chosen: Isotonic
    rules: dict[str, Isotonic]
    threshold: float
    fitted_on: dict[str, Any] = field(default_factory=dict)  # the questions and figures of the fit, for people

    def decide(self, option_probs: Sequence[float], rule: RuleAnswer) -> Decision:
        """The policy (see the module's docstring). With candidates the model scored (``option_probs``, each the
        candidate regression's probability), the most probable is chosen, at the chosen map's confidence. Else the
        rule reader's answer stands: one it declined stays declined (for what the evidence lacks, or by its own
        threshold), the answers it computes (``RULE_FAMILIES``) get their family's map, and any other stated
        answer keeps the reader's confidence. Stated when the confidence is at least the threshold."""
        if option_probs:
            best = max(range(len(option_probs)), key=lambda i: option_probs[i])
            conf = round(self.chosen(option_probs[best]), 3)
            return Decision(best, conf, conf >= self.threshold)
        if rule.abstained:
            return Decision(None, rule.confidence if rule.has_text else 0.0, False, hard=True)
        if rule.method in RULE_FAMILIES:
            conf = self.rule_confidence(rule.method, rule.confidence)
            return Decision(None, conf, conf >= self.threshold)
        return Decision(None, rule.confidence, True)

    def rule_confidence(self, method: str, confidence: float) -> float:
        """The calibrated confidence of an answer the reader computed (``RULE_FAMILIES``); others unchanged."""
        family = RULE_FAMILIES.get(method)
        iso = self.rules.get(family) if family else None
        return round(iso(confidence), 3) if iso is not None else confidence

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        return cls(Logistic(**data["candidate"]), Isotonic(**data["chosen"]),
                   {k: Isotonic(**v) for k, v in data["rules"].items()}, float(data["threshold"]),
                   dict(data.get("fitted_on", {})))  # fmt: skip


@lru_cache(maxsize=4)
def load(path: Path = DEFAULT_PATH) -> Calibration | None:
    """The calibration shipped with mmkg (or at ``path``); ``None`` when the file is missing."""
    if not path.is_file():
        return None
    try:
        return Calibration.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a calibration file ({exc}); refit it with benchmarks/reader_fit.py") from exc


def fit_logistic(rows: Sequence[Mapping[str, float]], labels: Sequence[int], names: Sequence[str],
                 c: float = 1.0, weights: Sequence[float] | None = None) -> Logistic:  # fmt: skip
    """A standardized L2 logistic regression of ``labels`` on the named features of ``rows`` (each row weighted by
    ``weights``, e.g. so that every family of questions counts alike)."""
    from sklearn.linear_model import LogisticRegression

    x = np.array([[float(r.get(n, 0.0)) for n in names] for r in rows])
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    w = None if weights is None else np.asarray(weights, dtype=float) * len(weights) / float(np.sum(weights))
    model = LogisticRegression(C=c, max_iter=3000).fit((x - mean) / scale, np.asarray(labels), sample_weight=w)
    return Logistic(list(names), [round(float(v), 6) for v in model.coef_[0]], round(float(model.intercept_[0]), 6),
                    [round(float(v), 6) for v in mean], [round(float(v), 6) for v in scale])  # fmt: skip


def fit_isotonic(probs: Sequence[float], labels: Sequence[int]) -> Isotonic:
    """A monotone map of ``probs`` to the observed rate of ``labels``, as its breakpoints."""
    from sklearn.isotonic import IsotonicRegression

    if len(set(labels)) < 2:
        return Isotonic([], [])
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(np.asarray(probs), np.asarray(labels))
    return Isotonic([round(float(v), 6) for v in iso.X_thresholds_], [round(float(v), 6) for v in iso.y_thresholds_])
