"""The short answer, stage by stage: the rule reader, the span model's choice, calibrated confidence, faithfulness.

``read(analysis, result, evidence)`` is what ``mmkg ask``, the REST API and ``mmkg eval`` run:

1. ``reader.Reader``: typed candidates, comparisons, yes/no, counts, arithmetic, keyed lookups (no model);
2. for span answers, a model reads: by default ``span_choice.SpanChooser``, mmkg's own extractive model
   (``span_reader``) pointing at spans of the evidence, merged with the reader's typed candidates; or, with
   ``reader_model = smollm2`` (or a GGUF path), ``model_reader.ModelReader``: SmolLM2 chooses among the reader's
   candidates and the spans of the best sentences. Either declines below its calibrated threshold;
3. ``calibration``: the policy (``Calibration.decide``, which the fit calls too): the confidence of the reader's
   computed answers, mapped to how often such answers are right, and what is stated;
4. ``support.enforce``: a stated answer the cited sentences do not say is declined.

The model is ``reader_model`` (``MMKG_READER_MODEL``): empty (the default) or ``span``, the span model; ``smollm2``,
the installed SmolLM2; a path, that GGUF file; ``off``, none. Without one the rule reader answers alone, and the
reason is returned as a note for the answer.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from mmkg.generation import calibration
from mmkg.generation.base import Evidence, GenerationError
from mmkg.generation.model_reader import ModelReader, Option
from mmkg.generation.question import QuestionAnalysis
from mmkg.generation.reader import Reader
from mmkg.generation.short_answer import ShortAnswer, below, decline
from mmkg.generation.span_choice import CALIBRATION, SpanChooser
from mmkg.generation.support import enforce
from mmkg.retrieval.results import RetrievalResult

log = logging.getLogger(__name__)


#: the ``reader_model`` values that pick the span model (the default) and the installed SmolLM2
SPAN = ("", "span", "span-reader")
SMOLLM2 = "smollm2"


@lru_cache(maxsize=4)
def _model_reader(path: Path, name: str) -> ModelReader:
    from mmkg.llm.likelihood import load

    return ModelReader(load(path, name), calibration.load())


@lru_cache(maxsize=1)
def _span_chooser() -> SpanChooser:
    from mmkg.generation.span_reader import load

    return SpanChooser(load(), calibration.load(CALIBRATION))


def model_reader(setting: str | None = None) -> tuple[ModelReader | SpanChooser | None, str]:
    """The model reader for ``setting`` (default: the ``reader_model`` setting), or ``None`` and why not."""
    from mmkg.llm.installed import ModelFileError, reader_model

    if setting is None:
        from mmkg.settings import get_settings

        setting = get_settings().reader_model
    if setting.strip().lower() in SPAN:
        if calibration.load(CALIBRATION) is None:
            return None, f"no calibration file ({CALIBRATION}); fit one with benchmarks/reader_fit.py --reader span"
        try:
            return _span_chooser(), ""
        except GenerationError as exc:
            log.warning("the span model could not be loaded: %s", exc)
            return None, str(exc)
    try:
        choice = reader_model("" if setting.strip().lower() == SMOLLM2 else setting)
    except ModelFileError as exc:
        return None, str(exc)
    if choice.path is None:
        return None, choice.reason
    if calibration.load() is None:
        return None, f"no calibration file ({calibration.DEFAULT_PATH}); fit one with benchmarks/reader_fit.py"
    try:
        return _model_reader(choice.path, choice.name), ""
    except GenerationError as exc:
        log.warning("the reading model could not be loaded: %s", exc)
        return None, str(exc)


@dataclass
class Reading:
    """The answer, and what led to it: the rule reader's own answer, the candidates the model scored (best
    first), and notes for the answer (why no model read it)."""

    answer: ShortAnswer
    rules: ShortAnswer
    options: list[Option] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read(analysis: QuestionAnalysis, result: RetrievalResult | None, evidence: Sequence[Evidence],
         model: str | None = None) -> Reading:  # fmt: skip
    """The short answer to ``analysis`` from ``evidence``, stage by stage (see the module's docstring)."""
    rules = Reader().read(analysis, result, evidence)
    reading, options = rules, []
    notes: list[str] = []
    mr, why = model_reader(model)
    if mr is not None:
        reading, options = mr.read(analysis, rules, evidence)
    else:
        notes.append(f"answered by the rule reader alone: {why}")
    cal = mr.calibration if mr is not None else None
    if cal is not None and not reading.model and not reading.abstained:  # the rule reader's answer stands
        decision = cal.decide([], calibration.RuleAnswer.of(reading))
        reading = replace(reading, confidence=decision.confidence)
        if not decision.stated:
            decline(reading, below(decision.confidence, cal.threshold), keep_confidence=True)
    return Reading(enforce(reading, evidence, analysis.options), rules, options, notes)
