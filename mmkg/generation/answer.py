"""Grounded answers: retrieve with any strategy, build the context, prompt a backend, keep the citations it used.

``answer(index, question)`` is the whole path; the ``Answer`` carries the text, the citations (chunk,
document, page, pictures and object regions, time span) that the text actually uses, the context the
model was shown, the backend and model, token counts and latency. A citation can only point at
evidence that was in the context: markers naming anything else are dropped and counted.

Before any backend runs, the question is analysed (``question.analyze``: answer type, relation, names)
and the reader (``reader.Reader``) finds the short answer in the evidence: the offline backend answers
with it, and a model's prompt carries it (``${hints}``: the typed candidates and the graph path). The
``Answer`` keeps the reading: short answer, confidence, supporting sentences with the answer's span,
and the path entity → relation → entity that led there.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from mmkg.generation.base import Evidence, Generation, GenerationRequest, Generator, approx_tokens
from mmkg.generation.context import Context, build_context, citation_markers, cited_labels, strip_citations
from mmkg.generation.counting import asked_parts, asks_items
from mmkg.generation.prompts import load_template
from mmkg.generation.question import analyze
from mmkg.generation.reader import Reader
from mmkg.generation.reading import read
from mmkg.generation.short_answer import ShortAnswer
from mmkg.retrieval import engine as retrieval
from mmkg.retrieval.document_lists import evidence_lists
from mmkg.retrieval.document_parts import document_parts
from mmkg.retrieval.references import pointed_pages
from mmkg.retrieval.results import RetrievalResult

#: chunks retrieved for each option of a choice or comparison question, beside the question's own
OPTION_CHUNKS = 3
#: the steps of ``retrieve`` that are reading, not retrieval: the question's parse, a two-hop question's bridge,
#: the lookup of the chunks' entity spans (answer latency counts them with the reader)
READING_STEPS = ("question", "bridge_read", "mentions")
#: the task a strategy's results read best with, when none is given
DEFAULT_TASKS = {"mkg": "mkg_graph", "m3kg": "m3kg_triples"}


@dataclass(frozen=True)
class Citation:
    label: int
    chunk_id: str
    doc_id: str
    title: str
    source_path: str
    page: int | None
    image_ids: tuple[str, ...] = ()
    objects: tuple[tuple[str, str, tuple[float, float, float, float] | None], ...] = ()
    time_span: tuple[float, float] | None = None

    @classmethod
    def of(cls, ev: Evidence) -> Citation:
        return cls(ev.label, ev.chunk_id, ev.doc_id, ev.title, ev.source_path, ev.page, ev.image_ids, ev.objects,
                   ev.time_span)  # fmt: skip


@dataclass
class Answer:
    question: str
    text: str
    citations: list[Citation]
    backend: str
    model: str
    task: str
    strategy: str
    extractive: bool
    prompt_tokens: int
    completion_tokens: int
    latency_ms: dict[str, float]
    context: str  # the evidence as the model was shown it
    system_prompt: str
    user_prompt: str
    index_version: str
    invalid_citations: int = 0  # markers in the text that named no evidence shown (dropped)
    notes: list[str] = field(default_factory=list)
    short_answer: str = ""  # the answer alone ("STS-93", "1921", "yes", "Not answerable"), no citation marks
    answer_type: str = ""  # what the question asks for: person, place, date, number, yes_no, choice, ...
    confidence: float = 0.0  # the reader's confidence in its short answer, 0..1 (LLM backends: the reader's too)
    reading: dict[str, Any] = field(default_factory=dict)  # the reader's answer: support spans, path, candidates

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def prepare(
    result: RetrievalResult,
    question: str,
    task: str | Path | None = None,
    budget: int = 1500,
    generator: Generator | None = None,
    image: Path | None = None,
    max_tokens: int = 512,
) -> tuple[GenerationRequest, Context, str]:
    """The request a backend gets for ``result``: the task's prompt filled with evidence within ``budget`` tokens."""
    task = task or DEFAULT_TASKS.get(result.strategy, "vqa" if image is not None else "qa")
    template = load_template(task)
    count = generator.count_tokens if generator is not None else None
    ctx = build_context(result, budget, count) if count else build_context(result, budget)
    note = "The question is about the attached picture.\n" if image is not None else ""
    t0 = time.perf_counter()
    analysis = analyze(question)
    done = read(analysis, result, ctx.evidence)
    reading = done.answer
    ctx.notes.extend(done.notes)
    # the question's parse, when ``retrieve`` did it first (the analysis is cached), counts here too
    # (and the bridge's reading of a two-hop question, done there to retrieve the bridge's page, and the lookup
    # of the chunks' entity spans)
    reading.latency_ms = round((time.perf_counter() - t0) * 1e3 + reading_ms(result), 2)
    system, user = template.render(
        question=question, context=ctx.text or "(no evidence was retrieved)", graph=ctx.graph or "(none)",
        triples=ctx.triples or "(none)", image_note=note, hints=hints(reading),
    )  # fmt: skip
    request = GenerationRequest(system, user, question, tuple(ctx.evidence), (image,) if image else (), max_tokens,
                                analysis=analysis, reading=reading)  # fmt: skip
    return request, ctx, template.name


def reading_ms(result: RetrievalResult) -> float:
    """Milliseconds ``retrieve`` spent reading (``READING_STEPS``) rather than retrieving."""
    return sum(result.timings_ms.get(step, 0.0) for step in READING_STEPS)


def hints(reading: ShortAnswer) -> str:
    """What the reader found, for a model's prompt: the answer type, typed candidates and the graph path; a count,
    or a value read off a keyed line, a label, a table row, a definition or a table's winning row, with the reader's
    reason."""
    lines = [f"Expected answer: {reading.answer_type.replace('_', '/')}"]
    if reading.candidates:
        lines.append("Candidates: " + "; ".join(f"{c.text} [{c.evidence}]" for c in reading.candidates[:5]))
    for step in reading.path:
        cite = f" [{step.label}]" if step.label else ""
        lines.append(f"Path: {step.subject} -> {step.predicate} -> {step.object}{cite}")
    if reading.method in ("parts", "list"):  # a count the evidence shows only in part
        lines.append(f"Count: {reading.guess or reading.text} ({reading.reason})")
    elif reading.method in ("lookup", "label", "row", "definition", "superlative") and not reading.abstained:
        # a value read off a line, a label, a table row, a definition or a table's winning row: no candidate list
        # says it
        lines.append(f"Read off the evidence: {reading.text} ({reading.reason})")
    if reading.abstained:
        lines.append("The evidence may not answer the question; say so if it does not.")
    return "\n".join(lines)


def _answer(
    result: RetrievalResult,
    question: str,
    text: str,
    gen: Generation,
    ctx: Context,
    request: GenerationRequest,
    task: str,
) -> Answer:
    labels = cited_labels(text, ctx)
    if gen.extractive and not labels:
        labels = list(gen.used)
    shown = {e.label: e for e in ctx.evidence}
    reading = gen.reading or request.reading  # a backend that reads spans (span-model) answers with its own
    short = reading.text if reading is not None and gen.extractive else strip_citations(text)
    return Answer(
        question=question, text=text, citations=[Citation.of(shown[n]) for n in labels], backend=gen.backend,
        model=gen.model, task=task, strategy=result.strategy, extractive=gen.extractive,
        prompt_tokens=gen.prompt_tokens, completion_tokens=gen.completion_tokens,
        latency_ms={"retrieve": round(result.timings_ms.get("total", 0.0) + result.timings_ms.get("options", 0.0), 2),
                    "read": reading.latency_ms if reading else 0.0,
                    "generate": round(gen.latency_ms, 2)},
        context=ctx.text, system_prompt=request.system, user_prompt=request.user, index_version=result.version,
        invalid_citations=sum(1 for n in citation_markers(text) if n not in shown), notes=[*result.notes, *ctx.notes],
        short_answer=short, answer_type=reading.answer_type if reading is not None else "",
        confidence=reading.confidence if reading is not None else 0.0,
        reading=reading.to_dict() if reading is not None else {},
    )  # fmt: skip


def _retrieve_and_prepare(
    index: Any,
    question: str,
    generator: Generator,
    image: Path | None,
    strategy: str | None,
    task: str | Path | None,
    k: int,
    budget: int,
    filters: dict | None,
    max_tokens: int,
    params: dict[str, Any],
) -> tuple[RetrievalResult, GenerationRequest, Context, str]:
    result = retrieve(index, question, image=image, k=k, strategy=strategy, filters=filters, **params)
    request, ctx, task_name = prepare(result, question, task, budget, generator, image, max_tokens)
    return result, request, ctx, task_name


def retrieve(
    index: Any,
    question: str,
    image: Path | None = None,
    k: int = 8,
    strategy: str | None = None,
    filters: dict | None = None,
    per_option: int = OPTION_CHUNKS,
    **params: Any,
) -> RetrievalResult:
    """The evidence an answer is read from (``_gather``), with the build's entity spans of each chunk attached
    where the index keeps them, so the reader runs no NER over those chunks; a question that counts gets the top
    document's labelled parts of the kind it counts, or else the lists on the evidence's pages."""
    result = _gather(index, question, image, k, strategy, filters, per_option, params)
    _attach_mentions(index, result)  # the chunks the options and the bridge added
    counted = asked_parts(question)
    if counted is not None and result.chunks:  # "How many appendices ...": the top document's parts, to count
        rows = document_parts(index, result.chunks[0].doc_id).filter(pl.col("kind") == counted[0])
        result.parts = rows.to_dicts()
    elif asks_items(question) and result.chunks:  # "How many steps ...": the lists the evidence's pages set out
        result.lists = evidence_lists(index, result)
    result.pointed_pages = pointed_pages(index, question, result)
    return result


def _attach_mentions(index: Any, result: RetrievalResult) -> None:
    """Attach the index's entity spans to the result's chunks that have none yet (timed as reading)."""
    t0 = time.perf_counter()
    todo = [c for c in result.chunks if c.mentions is None]
    found = index.mentions_in([c.chunk_id for c in todo]) if todo else None
    for c in todo if found is not None else ():
        c.mentions = found.get(c.chunk_id, ())
    result.timings_ms["mentions"] = round(result.timings_ms.get("mentions", 0.0) + (time.perf_counter() - t0) * 1e3, 2)


def _gather(index: Any, question: str, image: Path | None, k: int, strategy: str | None, filters: dict | None,
            per_option: int, params: dict[str, Any]) -> RetrievalResult:  # fmt: skip
    """The evidence an answer is read from: the question's retrieval, and for a question that compares
    options ("Which film came out first, A or B?", "Are A and B from the same country?") each option's own
    retrieval too (``per_option`` chunks each, queried with the option and the question's relation words),
    so every option's value can be read even when the question's retrieval found one side only.
    Option chunks lead the list (one per option first), then the question's, without repeats."""
    result = retrieval.retrieve(index, text=question, image=image, k=k, strategy=strategy, filters=filters, **params)
    _attach_mentions(index, result)
    t0 = time.perf_counter()
    analysis = analyze(question)
    result.timings_ms["question"] = round((time.perf_counter() - t0) * 1e3, 2)  # the parse, counted with reading
    things = analysis.options or (analysis.entities[:2] if analysis.answer_type == "yes_no" and analysis.same else ())
    if per_option >= 1 and not things and analysis.bridge and analysis.hops == 2:
        return _second_hop(index, result, analysis, per_option, strategy, filters, params)
    # a difference, sum or change of two values: each value's own question retrieves its evidence
    queries = list(analysis.arithmetic.questions) if analysis.arithmetic is not None and not things else []
    if (not things and not queries) or per_option < 1:
        return result
    t0 = time.perf_counter()
    extra: list[list[Any]] = []
    for query in queries or [" ".join([thing, *analysis.relation_words]) for thing in things]:
        hits = retrieval.retrieve(index, text=query, k=per_option, strategy=strategy, filters=filters, **params).chunks
        extra.append(hits)
    _merge(result, [*(h[0] for h in extra if h), *result.chunks, *(c for h in extra for c in h[1:])])
    result.timings_ms["options"] = round((time.perf_counter() - t0) * 1e3, 2)
    result.notes.append(f"each of {len(things)} options retrieved on its own ({per_option} chunks each)" if things
                        else f"each of the {len(queries)} values retrieved on its own ({per_option} chunks each)")
    if analysis.bridge and analysis.hops == 2:  # "Which film has the director born first, A or B?"
        for thing in things:  # each option's bridge page, right after the options' own first chunks
            result = _second_hop(index, result, replace(analysis, entities=(thing,)), 1, strategy, filters, params,
                                 at=len(things))  # fmt: skip
    return result


def _merge(result: RetrievalResult, chunks: list[Any]) -> None:
    """Set ``result.chunks`` to ``chunks`` in that order, each chunk once, ranked anew from 1."""
    seen: set[str] = set()
    merged = []
    for c in chunks:
        if c.chunk_id not in seen:
            seen.add(c.chunk_id)
            merged.append(c)
    for rank, c in enumerate(merged, 1):
        c.rank = rank
    result.chunks = merged


def _second_hop(index: Any, result: RetrievalResult, analysis: Any, per_option: int, strategy: str | None,
                filters: dict | None, params: dict[str, Any], at: int = 2) -> RetrievalResult:  # fmt: skip
    """A two-hop question ("Where was the director of film X born?") whose bridge person's own page was not
    retrieved: read the bridge off the evidence (the reader's first hop), retrieve its page with the words of
    the second hop, and place those chunks right after the question's first ``at`` (the named thing's page),
    so the answer's page is in the context. One more retrieval, only when the bridge's page is missing."""
    t0 = time.perf_counter()
    bridge = Reader().bridge_name(analysis, result, build_context(result).evidence)
    # reading, counted with the reader
    spent = (time.perf_counter() - t0) * 1e3
    result.timings_ms["bridge_read"] = round(result.timings_ms.get("bridge_read", 0.0) + spent, 2)
    titles = {c.title.casefold() for c in result.chunks if c.title}
    if not bridge or any(t == bridge.casefold() or t.startswith(bridge.casefold() + " (") for t in titles):
        return result
    words = analysis.second_hop_words
    t0 = time.perf_counter()
    hits = retrieval.retrieve(index, text=" ".join([bridge, *words]), k=per_option, strategy=strategy,
                              filters=filters, **params).chunks  # fmt: skip
    _merge(result, [*result.chunks[:at], *hits, *result.chunks[at:]])
    result.timings_ms["options"] = round(result.timings_ms.get("options", 0.0) + (time.perf_counter() - t0) * 1e3, 2)
    result.notes.append(f"the bridge {bridge!r} retrieved on its own ({per_option} chunks)")
    return result


def answer(
    index: Any,
    question: str,
    generator: Generator,
    image: Path | None = None,
    strategy: str | None = None,
    task: str | Path | None = None,
    k: int = 8,
    budget: int = 1500,
    filters: dict | None = None,
    max_tokens: int = 512,
    **params: Any,
) -> Answer:
    """Retrieve with ``strategy``, then answer with ``generator`` from that evidence, citing it."""
    result, request, ctx, task_name = _retrieve_and_prepare(
        index, question, generator, image, strategy, task, k, budget, filters, max_tokens, params
    )
    gen = generator.generate(request)
    return _answer(result, question, gen.text, gen, ctx, request, task_name)


def answer_stream(
    index: Any,
    question: str,
    generator: Generator,
    image: Path | None = None,
    strategy: str | None = None,
    task: str | Path | None = None,
    k: int = 8,
    budget: int = 1500,
    filters: dict | None = None,
    max_tokens: int = 512,
    **params: Any,
) -> Iterator[str | Answer]:
    """Like ``answer``, yielding the text as it is generated and the ``Answer`` last."""
    result, request, ctx, task_name = _retrieve_and_prepare(
        index, question, generator, image, strategy, task, k, budget, filters, max_tokens, params
    )
    if getattr(generator, "extractive", False):  # copied, not written: one piece, and the reading it came from
        gen = generator.generate(request)
        yield gen.text
        yield _answer(result, question, gen.text, gen, ctx, request, task_name)
        return
    t0 = time.perf_counter()
    pieces = []
    for piece in generator.stream(request):
        pieces.append(piece)
        yield piece
    text = "".join(pieces)
    gen = Generation(text, generator.name, generator.model, approx_tokens(request.system + request.user),
                     approx_tokens(text), (time.perf_counter() - t0) * 1e3)  # fmt: skip
    yield _answer(result, question, text, gen, ctx, request, task_name)
