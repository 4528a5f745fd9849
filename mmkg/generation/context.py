"""From a strategy's result to the evidence a prompt shows, within a token budget, and back from citations.

Evidence is numbered in rank order: the result's chunks (title, page and text, cut to what fits), and
for the graph tasks the selected entities and triples. A chunk is shown whole or cut at a sentence
boundary; items that do not fit are left out, never half a number. Citations in an answer are the
``[n]`` markers that name an item shown; a marker naming anything else is dropped, so a citation
always points at evidence that was in the context.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from mmkg.generation.base import Evidence, approx_tokens
from mmkg.retrieval.results import RetrievalResult

_CITE = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")
_SENT = re.compile(r"(?<=[.!?])\s+")


@dataclass
class Context:
    """The numbered evidence a prompt shows, and the graph lines for graph-aware tasks."""

    evidence: list[Evidence]
    text: str  # the numbered blocks, as the prompt shows them
    graph: str = ""  # entities and triples (mKG-RAG's graph elements)
    triples: str = ""  # triples with entity descriptions (M3KG-RAG)
    tokens: int = 0  # of text + graph + triples, by the counter used
    left_out: int = 0  # chunks that did not fit the budget
    notes: list[str] = field(default_factory=list)


def _fit(text: str, budget: int, count: Callable[[str], int]) -> str:
    """The longest prefix of whole sentences within ``budget`` tokens ("" if not even the first fits)."""
    if count(text) <= budget:
        return text
    out = ""
    for sent in _SENT.split(text):
        trial = f"{out} {sent}".strip()
        if count(trial) > budget:
            break
        out = trial
    return out


def build_context(
    result: RetrievalResult,
    budget: int = 1500,
    count: Callable[[str], int] = approx_tokens,
    max_items: int = 10,
    graph_lines: int = 20,
    graph_share: float = 0.25,
) -> Context:
    """Numbered evidence from ``result`` within ``budget`` tokens.

    Chunks first; when the strategy selected graph elements, a share ``graph_share`` of the budget is
    kept for the entity and triple lines (they cite the chunk numbers), and what the chunks leave joins it.
    """
    evidence: list[Evidence] = []
    chunk_budget = int(budget * (1 - graph_share)) if (result.entities or result.relations) else budget
    blocks: list[str] = []
    used = 0
    left_out = 0
    for c in result.chunks[:max_items]:
        label = len(evidence) + 1
        t_start, t_end = getattr(c, "t_start", None), getattr(c, "t_end", None)
        at = f", {t_start:.1f}-{(t_end or t_start):.1f} s" if t_start is not None else ""
        where = f"{c.title}" + (f", page {c.page}" if c.page and not at else at) + f" ({c.source_path})"
        head = f"[{label}] {where}\n"
        room = chunk_budget - used - count(head)
        body = _fit(c.text.strip(), room, count) if room > 0 else ""
        if not body:
            left_out += 1
            continue
        block = head + body
        used += count(block)
        blocks.append(block)
        evidence.append(
            Evidence(
                label=label, kind="chunk", text=body, chunk_id=c.chunk_id, doc_id=c.doc_id, title=c.title,
                source_path=c.source_path, page=c.page, image_ids=tuple(i.image_id for i in c.images),
                objects=tuple((o.object_id, o.image_id, o.box) for o in c.objects),
                sentences=tuple((s.text, s.score) for s in c.sentences), score=c.score,
                time_span=(float(t_start), float(t_end or t_start)) if t_start is not None else None,
                chunk_index=getattr(c, "chunk_index", None), mentions=getattr(c, "mentions", None),
            )
        )  # fmt: skip
    left_out += max(0, len(result.chunks) - max_items)
    chunk_label = {e.chunk_id: e.label for e in evidence}
    graph, triples = [], []
    for e in result.entities[:graph_lines]:
        line = f"- {e.name} ({e.label})" + (
            f" [{', '.join(str(chunk_label[c]) for c in e.chunk_ids if c in chunk_label)}]"
            if any(c in chunk_label for c in e.chunk_ids)
            else ""
        )
        if used + count(line) > budget:
            break
        used += count(line)
        graph.append(line)
    names = {e.entity_key: e.name for e in result.entities}
    for r in result.relations[:graph_lines]:
        cite = f" [{chunk_label[r.chunk_id]}]" if r.chunk_id in chunk_label else ""
        line = f"- {r.subject} | {'not ' if r.negated else ''}{r.predicate} | {r.object}{cite}"
        desc = f"  ({r.subject}: {r.sentence})" if r.subject_key in names and r.sentence else ""
        if used + count(line) > budget:
            break
        used += count(line)
        graph.append(line)
        triples.append(line + desc if used + count(desc) <= budget else line)
        if desc and used + count(desc) <= budget:
            used += count(desc)
    notes = []
    if left_out:
        notes.append(f"{left_out} retrieved chunk(s) left out of the context (token budget {budget})")
    return Context(evidence, "\n\n".join(blocks), "\n".join(graph), "\n".join(triples), used, left_out, notes)


def citation_markers(text: str) -> list[int]:
    """Every number an answer cites with ``[n]`` / ``[n, m]``, in order, repeats included."""
    return [int(part) for m in _CITE.finditer(text) for part in re.split(r"\s*[,;]\s*", m.group(1))]


def strip_citations(text: str) -> str:
    """The text without its ``[n]`` / ``[n, m]`` markers (a model's answer as a short answer)."""
    return re.sub(r"\s*" + _CITE.pattern, "", text).strip()


def cited_labels(text: str, context: Context) -> list[int]:
    """The evidence numbers an answer cites, in order, once each, only those that were shown."""
    shown = {e.label for e in context.evidence}
    return [n for n in dict.fromkeys(citation_markers(text)) if n in shown]
