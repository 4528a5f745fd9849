"""The second hop without an LLM: from the passages round one found to the pages of what they name.

On a multi-hop question ("Where was the composer of film Billy Elliot born?") one round of PPR from
the entities the question names puts their passage first (*Billy Elliot*), but the passage that
answers is about the entity that passage leads to (*Stephen Warbeck*), which the question never
names. Iterative retrieval (IRCoT, HippoRAG's multi-step) asks an LLM for the next hop; this reads
it off the index instead:

1. **Hop-one passages**: for each linked entity, the best ``bridge_passages`` chunks of its own page
   after round one (the documents titled by it), or of the chunks that mention it when it has none.
2. **Bridge entities**: the entities mentioned in those chunks' sentences (the sentence–entity
   incidence, MG2-RAG's M_SE), other than the linked ones and the passage's own subject. Each is
   weighted by softmax(cosine of its sentence and the question / ``bridge_temperature``): the sentence
   that states the question's relation ("The music was composed by Stephen Warbeck") carries its
   entity. The best ``bridge_entities`` per passage are kept.
3. **Own pages**: a bridge entity's mass goes to the chunks of the documents titled by it (the
   canonical key of the title, or of the title without a parenthetical, "David Bradley (director)"),
   split by softmax of their cosine with the question (all pages' vectors in one read,
   ``Index.cosines_for_rows``: from LanceDB by id, through a B-tree on ``id``, when the chunk table is
   ANN-searched, about 9 ms at 150k chunks); an entity without a page of its own is seeded on its node,
   and PPR spreads it to the chunks that mention it.
4. **Round two**: PPR again from ``(1 - bridge_weight) r0 + bridge_weight b``; chunks are ranked by it.

Corpora whose documents are not titled by entities simply have no own pages: step 3 falls back to
the entity node. One more PPR per question (about as long as the first).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from mmkg.entities import canonical_key
from mmkg.index.derived import derived
from mmkg.retrieval import evidence as ev

if TYPE_CHECKING:
    from mmkg.index.reader import Index

_PAREN = re.compile(r"^(.*?\S)\s*\([^()]*\)\s*$")  # "David Bradley (director)" -> "David Bradley"


@dataclass
class BridgeMaps:
    """Per-version lookups the second hop needs, built once per reader."""

    chunk_ids: list[str]  # chunk id of each chunk row
    smi: sp.csr_array  # sentence row x entity column (relational mentions)
    col_key: np.ndarray  # entity key of each column
    col_node: np.ndarray  # graph node of each column (-1: not a graph entity)
    pages: dict[str, np.ndarray]  # entity key -> chunk rows of the documents titled by it
    chunk_subject: np.ndarray  # per chunk row, the key of its document's title (and its base, "|" joined)


def title_keys(title: str) -> tuple[str, ...]:
    """The entity keys a document title stands for: the title's, and its base without a parenthetical."""
    keys = [canonical_key(title)] if title else []
    if title and (m := _PAREN.match(title)):
        keys.append(canonical_key(m.group(1)))
    return tuple(k for k in dict.fromkeys(keys) if k)


def maps(index: Index) -> BridgeMaps:
    """The bridge step's maps of one open index (chunk subjects, title pages, sentence-mention columns)."""
    return derived(index, "bridge.maps", lambda: _maps(index))


def _maps(index: Index) -> BridgeMaps:
    n_chunks = index.n_chunks
    chunk_pos = index.positions["chunks"]
    col_key = index.m_smi.col_ids  # Python strings: a fixed-width copy held 220 MB at 302k chunks
    node_of = index.entity_node
    col_node = np.asarray([node_of.get(k, -1) for k in col_key.tolist()], dtype=np.int64)
    titles = dict(index.chunks.select("chunk_id", "title").iter_rows())
    pages: dict[str, list[int]] = {}
    subject = np.empty(n_chunks, dtype=object)
    for chunk_id, row in chunk_pos.items():
        keys = title_keys(titles.get(chunk_id) or "")
        subject[row] = "|".join(keys)
        for k in keys:
            pages.setdefault(k, []).append(row)
    out = BridgeMaps(
        chunk_ids=index.meta["chunks"]["id"].to_list(),
        smi=index.m_smi.matrix.tocsr(),
        col_key=col_key,
        col_node=col_node,
        pages={k: np.asarray(sorted(v), dtype=np.int64) for k, v in pages.items()},
        chunk_subject=subject,
    )
    return out


def _softmax(x: np.ndarray, temperature: float) -> np.ndarray:
    w = np.exp((x - x.max()) / temperature)
    return w / w.sum()


NOT_BRIDGES = frozenset({"DATE", "TIME", "CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY"})
CONTEXT_WORDS = 6  # words before a mention that say how the passage relates it ("music by", "son of")


def relation_text(question: str, links: list) -> str:
    """The question without the names it links: what it asks about them ("Where was the composer of film born?")."""
    out, last = [], 0
    for link in sorted(links, key=lambda lk: lk.start):
        out.append(question[last : link.start])
        last = link.end
    out.append(question[last:])
    return " ".join(" ".join(out).split()) or question


def mention_context(sentence: str, name: str) -> str:
    """The few words before the first mention of ``name`` in ``sentence``, and the mention ("music by X")."""
    at = sentence.casefold().find(name.casefold())
    if at < 0:
        return sentence
    before = sentence[:at].split()[-CONTEXT_WORDS:]
    return " ".join([*before, sentence[at : at + len(name)]])


def bridge_seeds(
    index: Index,
    r: np.ndarray,
    question: str,
    mask: np.ndarray | None,
    passages: int,
    entities: int,
    temperature: float,
) -> tuple[np.ndarray | None, list[str]]:
    """Seed mass on the own pages of the entities round one's best passages lead to, and those entities."""
    m = maps(index)
    n = index.n_chunks
    links = index.link(question)
    linked = list(dict.fromkeys(k for link in links for k in link.keys))
    chunk_r = r[:n].astype(np.float64)
    if mask is not None:
        chunk_r = np.where(mask, chunk_r, -np.inf)
    adj = index.graph.adjacency
    linked_set = set(linked)
    hop1: list[int] = []
    for key in linked:
        node = index.entity_node.get(key)
        if node is None:
            continue
        cand = m.pages.get(key, np.zeros(0, np.int64))  # its own page, when it has one
        cand = cand[np.isfinite(chunk_r[cand])] if cand.size else cand
        if not cand.size:  # else the passages that mention it
            nbrs = adj.indices[adj.indptr[node] : adj.indptr[node + 1]]
            cand = nbrs[nbrs < n]
            cand = cand[np.isfinite(chunk_r[cand])] if cand.size else cand
        if cand.size:
            best = cand[np.argsort(-chunk_r[cand], kind="stable")[:passages]]
            hop1 += [int(c) for c in best if int(c) not in hop1]
    names = ev.entity_names(index)
    candidates: list[tuple[int, int, str]] = []  # (hop-one passage, entity column, mention context)
    for chunk in hop1:
        own = set(str(m.chunk_subject[chunk]).split("|"))
        seen: set[int] = set()
        found: list[tuple[int, int, str]] = []
        for srow, _, text in ev.chunk_sentences(index, m.chunk_ids[chunk]):
            for col in m.smi.indices[m.smi.indptr[srow] : m.smi.indptr[srow + 1]].tolist():
                key = str(m.col_key[col])
                name, label = names.get(key, (key, ""))
                if col in seen or key in linked_set or key in own or m.col_node[col] < 0 or label in NOT_BRIDGES:
                    continue
                seen.add(col)
                found.append((chunk, col, mention_context(text, name)))
        with_page = [c for c in found if str(m.col_key[c[1]]) in m.pages]
        candidates += with_page or found  # an entity with a page of its own is where a hop lands
    if not candidates:
        return None, []
    q_rel = index.encode_text(relation_text(question, links))
    ctx = np.asarray(index.encode_texts([c for _, _, c in candidates]), dtype=np.float64) @ q_rel
    seeds = np.zeros(index.graph.n, dtype=np.float64)
    bridges: list[str] = []
    on_pages: list[tuple[float, np.ndarray]] = []  # (share, the entity's own page's chunk rows)
    for chunk in dict.fromkeys(c for c, _, _ in candidates):
        mine = [i for i, c in enumerate(candidates) if c[0] == chunk]
        weight = _softmax(ctx[mine], temperature)
        order = np.argsort(-weight, kind="stable")[:entities]
        total = float(weight[order].sum())
        for j in order.tolist():
            col = candidates[mine[j]][1]
            share = float(weight[j]) / total / len(hop1)
            key = str(m.col_key[col])
            bridges.append(key)
            pages = m.pages.get(key, np.zeros(0, np.int64))
            if mask is not None and pages.size:
                pages = pages[mask[pages]]
            if pages.size:
                on_pages.append((share, pages))
            else:
                seeds[m.col_node[col]] += share
    if on_pages:  # one read of the pages' vectors (by id from LanceDB when the chunk table is ANN-searched)
        rows = np.concatenate([pages for _, pages in on_pages])
        cos = index.cosines_for_rows("chunks", q_rel, rows).astype(np.float64)
        at = 0
        for share, pages in on_pages:
            np.add.at(seeds, pages, share * _softmax(cos[at : at + pages.size], 0.1))
            at += pages.size
    if seeds.sum() <= 0:
        return None, []
    return seeds / seeds.sum(), list(dict.fromkeys(bridges))
