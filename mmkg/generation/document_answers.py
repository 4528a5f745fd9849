"""Answers read off a document's structure rather than its prose: the line a code keys, the value under a label,
a table row the question names, the row that wins a superlative, a term's definition, how many parts or list items
a document sets out, and whether an answer was read on the page the question points at.

Each answer here is what one structure of the evidence gives, found by ``mmkg.generation.lookup``,
``superlative``, ``definition`` and ``counting``; the rule reader (``reader.Reader.read``) asks these before it
reads spans. Each returns a ``ShortAnswer`` with its supporting sentence, or None when the structure is absent or
ambiguous.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mmkg.generation.base import Evidence
from mmkg.generation.cells import asked_words
from mmkg.generation.counting import COMPLETE, asks_items, count_items, count_parts
from mmkg.generation.definition import definitions, expansions
from mmkg.generation.lookup import codes, keyed_lines, labelled_lines, named_rows
from mmkg.generation.question import TYPE_LABELS, QuestionAnalysis
from mmkg.generation.sentences import Sentence
from mmkg.generation.short_answer import ShortAnswer, Support, normalize
from mmkg.generation.superlative import best_row, ruled_tables, text_tables
from mmkg.parts import PART, kind_of
from mmkg.retrieval.results import RetrievalResult

KEYED = 0.5  # a value read off the lines that a question's code or label keys (``lookup``, ``label``)


TABLE_NAMED = 0.25  # the share of a superlative question's words a table must name around it to answer it


ROW_WORDS = 2  # the question's words a table row's labels must name to answer with its value (``row``)


def _fmt(value: float) -> str:
    return f"{round(value, 2):g}"


def chunk_items(evidence: Sequence[Evidence]) -> list[tuple[int, str]]:
    """``(label, text)`` of the evidence's chunks: what the lookups (``mmkg.generation.lookup``) and definitions
    read line by line."""
    return [(e.label, e.text) for e in evidence if e.kind == "chunk"]


def value_support(sentences: Sequence[Sentence], label: int, value: str, *first: str,
                   ) -> tuple[Sentence | None, list[Support]]:  # fmt: skip
    """The sentence of evidence item ``label`` that holds one of ``first`` (tried in order; the sentence splitter
    may cut a keyed line at "2.") or else ``value``, and the support marking ``value`` in it (start -1 when that
    sentence does not spell it); (None, []) when no sentence of the item holds them."""
    mine = [s for s in sentences if s.label == label]
    s = next((s for text in (*first, value) for s in mine if text in s.text), None)
    if s is None:
        return None, []
    at = s.text.find(value)
    return s, [Support(s.label, s.text, at, at + len(value) if at >= 0 else -1)]


def spelled_support(sentences: Sequence[Sentence], label: int, value: str) -> list[Support]:
    """The support marking ``value`` in a sentence of evidence item ``label`` whatever the line breaks inside it
    (a definition is read with its lines joined): the whole value, else its first six words to the sentence's end
    (the sentence splitter may cut it); [] when no sentence of the item holds it."""
    words = value.split()
    for n in (len(words), min(6, len(words))):
        pattern = re.compile(r"\s+".join(re.escape(w) for w in words[:n]))
        for s in sentences:
            m = pattern.search(s.text) if s.label == label else None
            if m is not None:
                return [Support(s.label, s.text, m.start(), m.end() if n == len(words) else len(s.text))]
    return []


def on_pointed_pages(evidence: Sequence[Evidence], result: RetrievalResult | None) -> Sequence[Evidence]:
    """The evidence on the pages the question points at ("on page 14", "the cover page"), when any is there: the
    answer is read from them alone, rather than read elsewhere and declined (``off_page``); all of it
    when none is, or the question points nowhere."""
    pointed = result.pointed_pages if result is not None else {}
    if not pointed:
        return evidence
    there = [e for e in evidence if e.doc_id in pointed and e.page in pointed[e.doc_id]]
    return there or evidence


def keyed(q: QuestionAnalysis, evidence: Sequence[Evidence], sentences: Sequence[Sentence]) -> ShortAnswer | None:
    """What the one line keyed by the question's code gives for it (``mmkg.generation.lookup``): "1. Little
    Rock AR01" for "the market name for AR01". None when no line holds a code, or lines give it different
    values."""
    if len(codes(q.text)) != 1:
        return None  # "from P-1 to P-26": a range, or two things named, is no key
    lines = keyed_lines(q.text, chunk_items(evidence))
    values = {normalize(k.value) for k in lines}
    if len(values) != 1:
        return None
    k = lines[0]
    _, support = value_support(sentences, k.label, k.value, k.line)
    times = f", {len(lines)} times" if len(lines) > 1 else ""
    return ShortAnswer(k.value, q.answer_type, KEYED, method="lookup", support=support,
                       reason=f"the one line of the evidence that holds {k.code}{times}: {k.line!r}")  # fmt: skip


def labelled(q: QuestionAnalysis, evidence: Sequence[Evidence], sentences: Sequence[Sentence],
              ) -> ShortAnswer | None:  # fmt: skip
    """The value the evidence gives under a label the question asks for (``mmkg.generation.lookup``):
    "Produced by: Florida Department of Health" for "who produced the document?". A what/which question
    must name the noun it asks for and the label must hold it ("source" in "Source: eMarketer"); a who
    question's label holds its verb. Only items that state the years the question names count. None when no
    line opens with such a label, or lines give it different values."""
    head = q.focus.lower()[:5] if q.focus else ""
    if not head and q.wh not in ("who", "whom"):
        return None
    asked = set(q.relation) | ({head} if head else set())
    # the value is read off one item: the years the question names ("revised on May 2016") must be there
    items = [(e.label, e.text) for e in evidence if e.kind == "chunk" and all(str(y) in e.text for y in q.years)]
    lines = labelled_lines(asked, head, items)
    if len({normalize(k.value) for k in lines}) != 1:
        return None
    k = lines[0]
    s, support = value_support(sentences, k.label, k.value)
    answer_type = q.answer_type
    if s is not None:  # "who produced it?": an organization, where the build's entity spans say so
        at = support[0].start
        answer_type = next((t for _, label, a, b in s.ents or () if (a, b) == (at, at + len(k.value))
                            for t, labels in TYPE_LABELS.items() if label in labels), answer_type)  # fmt: skip
    times = f", {len(lines)} times" if len(lines) > 1 else ""
    return ShortAnswer(k.value, answer_type, KEYED, method="label", support=support,
                       reason=f"the evidence gives it under the label {k.key!r}{times}: {k.line!r}")  # fmt: skip


def row_value(q: QuestionAnalysis, evidence: Sequence[Evidence], sentences: Sequence[Sentence]) -> ShortAnswer | None:
    """The value of the table row whose labels name the question's words (``mmkg.generation.lookup``): "Down
    button | Press and hold | Function: Wake up the voice assistant." for "What will happen when you press and
    hold the down button?". The row must name at least two of the question's words and half of them; rows
    that name as many (with as few other words) but give other values answer nothing. Confidence: ``KEYED``
    times the share of the question's words the row names."""
    rows = named_rows(q.text, chunk_items(evidence))
    asked = asked_words(q.text)
    if not rows or rows[0].named < ROW_WORDS or rows[0].named < len(asked) / 2:
        return None
    best = rows[0]
    tied = {normalize(r.value) for r in rows if (r.named, r.extra) == (best.named, best.extra)}
    if len(tied) > 1:
        return None
    share = best.named / len(asked)
    header = f" under {best.header!r}" if best.header else ""
    return ShortAnswer(best.value, q.answer_type, round(KEYED * share, 3), method="row",
                       support=spelled_support(sentences, best.label, best.value),
                       reason=f"the table row whose labels name {best.named} of the question's {len(asked)} "
                              f"words gives it{header}: {best.line[:160]!r}")  # fmt: skip


def superlative_row(q: QuestionAnalysis, evidence: Sequence[Evidence], sentences: Sequence[Sentence],
                 ) -> ShortAnswer | None:  # fmt: skip
    """The label of the table row whose value wins the question's superlative (``mmkg.generation.superlative``):
    "Leaders in Education Programme" (7 months) for "Which program has the longest time period?". The table
    must name at least ``TABLE_NAMED`` of the question's words around it. Confidence: ``KEYED`` times one half
    plus half that share."""
    items = chunk_items(evidence)
    tables = [t for label, text in items for t in (*ruled_tables(label, text), *text_tables(label, text))]
    win = best_row(q.text, q.superlative, tables, q.entities)
    if win is None or win.named < TABLE_NAMED:
        return None
    row = win.row
    support = spelled_support(sentences, win.table.evidence, row.label) or \
        spelled_support(sentences, win.table.evidence, row.line)  # fmt: skip
    unit = {"%": "%", "days": " days"}.get(row.kind, "")
    word = ("smallest", "largest")[q.superlative == "max"]
    measure = f"{win.column} value" if win.column and win.column != "total" else (win.column or "value")
    return ShortAnswer(row.label, q.answer_type, round(KEYED * (0.5 + 0.5 * win.named), 3), method="superlative",
                       support=support,
                       reason=f"the row of a table in [{win.table.evidence}] with the {word} {measure} "
                              f"({_fmt(win.value)}{unit}, the next {_fmt(win.runner_up)}{unit}): "
                              f"{row.line[:160]!r}",
                       )  # fmt: skip


def defined(asked: tuple[str, str], evidence: Sequence[Evidence], sentences: Sequence[Sentence],
             ) -> ShortAnswer | None:  # fmt: skip
    """The evidence's definition of the term a question asks about (``mmkg.generation.definition``): the
    first in evidence order, an acronym's spelled-out form first when it asks what the acronym stands for. A
    term defined differently in other items is answered with less confidence. None when no item defines it."""
    term, kind = asked
    items = chunk_items(evidence)
    found = (expansions(term, items) if kind == "expand" else []) or definitions(term, items)
    if not found:
        return None
    d = found[0]
    others = {normalize(x.text) for x in found} - {normalize(d.text)}
    support = spelled_support(sentences, d.label, d.text)
    times = f", {len(found)} times" if len(found) > 1 else ""
    disagree = f"; {len(others)} other definition(s) differ" if others else ""
    how = {"lead": "opens", "verb": "is the subject of", "expansion": "is spelled out in"}[d.shape]
    return ShortAnswer(d.text, "string", KEYED * (0.8 if others else 1.0), method="definition", support=support,
                       reason=f"the evidence defines {d.term!r} ([{d.label}]{times}): the term {how} the "
                              f"definition{disagree}")  # fmt: skip


def off_page(ans: ShortAnswer, evidence: Sequence[Evidence], result: RetrievalResult | None) -> str:
    """Why an answer read off one sentence cannot answer a question that points at other pages of the same
    document ("on the last page", "page 14"), or "" when it can: the question says where the answer is."""
    pointed = result.pointed_pages if result is not None else {}
    if not pointed or ans.abstained or not ans.support or \
            ans.method not in ("span", "arithmetic", "lookup", "label", "row", "definition"):  # fmt: skip
        return ""
    home = next((e for e in evidence if e.label == ans.support[0].label), None)
    if home is None or home.page is None or home.doc_id not in pointed or home.page in pointed[home.doc_id]:
        return ""
    pages = ", ".join(str(p) for p in pointed[home.doc_id])
    return f"the question points at page(s) {pages} and the answer was read on page {home.page}"


def count_labelled_parts(q: QuestionAnalysis, counted: tuple[str, bool], result: RetrievalResult,
           sentences: Sequence[Sentence]) -> ShortAnswer | None:  # fmt: skip
    """How many parts of the asked kind the top document labels (``mmkg.generation.counting``), each part
    listed with its page; the caption lines the evidence shows support it. None when it labels none."""
    kind, mentioned = counted
    n, confidence, rows = count_parts(kind, mentioned, result.parts)
    if not n:
        return None
    support = []
    for p in rows:
        head = " ".join(str(p["caption"] or "").split()[:6])
        s = next((s for s in sentences
                  if s.chunk_id == p["chunk_id"] and head and head in " ".join(s.text.split())), None)  # fmt: skip
        label = str(p["label"]).upper()
        m = next((m for m in PART.finditer(s.text) if kind_of(m.group(1)) == kind
                  and m.group(2).upper() == label), None) if s is not None else None  # fmt: skip
        if s is not None and m is not None:  # the label as the sentence writes it: "Appendix A", "Fig. 2"
            support.append(Support(s.label, s.text, m.start(), m.end(), s.chunk_id, s.offset))
    listed = ", ".join(f"{p['label']} (p. {p['page']})" if p["page"] else str(p["label"]) for p in rows[:12])
    listed += ", ..." if len(rows) > 12 else ""
    title = next((c.title for c in result.chunks if c.doc_id == rows[0]["doc_id"] and c.title), "")
    what = "names" if mentioned else "opens a line with (a caption, a heading, a contents entry)"
    gaps = "" if confidence == COMPLETE else "; the labels leave gaps, so some may be missed"
    doc = f"the document {title!r}" if title else "the document"
    return ShortAnswer(str(n), q.answer_type, confidence, method="parts", support=support[:3],
                       reason=f"{doc} {what} {n} {kind} label(s): {listed}{gaps}")  # fmt: skip


def count_listed(q: QuestionAnalysis, result: RetrievalResult, sentences: Sequence[Sentence]) -> ShortAnswer | None:
    """How many items the list that best fits a "how many" question sets out (``counting.count_items``), with
    the evidence sentences that show its heading and items as support. None when no list's heading fits."""
    if not asks_items(q.text):
        return None
    got = count_items(q.text, result.lists)
    if got is None:
        return None
    n, confidence, chosen, share = got
    support = []
    for line in (chosen.heading, *chosen.items):
        s = next((s for s in sentences if line and line in s.text), None)
        if s is not None and all(sp.sentence != s.text for sp in support):
            at = s.text.index(line)
            support.append(Support(s.label, s.text, at, at + len(line), s.chunk_id, s.offset))
    pages = f"p. {chosen.pages[0]}" if len(chosen.pages) == 1 else \
        f"pp. {chosen.pages[0]}-{chosen.pages[-1]}" if chosen.pages else "the document"
    return ShortAnswer(str(n), q.answer_type, confidence, method="list", support=support[:3],
                       reason=f"the {chosen.style} list under {chosen.heading!r} ({pages}) sets out {n} item(s), "
                              f"and its heading holds {share:.0%} of the question's words")  # fmt: skip
