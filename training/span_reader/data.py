"""The span reader's training and check examples, and where each comes from.

Sources (the model card, ``MODEL_CARD.md``, lists them with their licenses):

1. ``squad2_fragment.json`` beside this file: the six Wikipedia articles of SQuAD 2.0's development set that public
   repositories carry in full (CC BY-SA 4.0, Rajpurkar et al. 2018), human questions with answers and questions
   written to have none. The article ``Victoria_(Australia)`` is kept out of training: it is the check of the
   learning curve.
2. Questions generated (``questions.py``) from the same articles' paragraphs but the checked one.
3. Questions generated from the descriptions of the Python packages installed beside mmkg (their ``METADATA``
   long descriptions), only of packages whose license is MIT, BSD, Apache, ISC, PSF or MPL: plain technical prose
   ("X is written in Rust", "it stores its state in SQLite").

4. ``written/``: short corpora the team wrote for training (invented notes, manuals, minutes, biographies, reports)
   with hand-written questions, answerable and not; ``WRITTEN_CHECK`` are kept out of training as the second check
   of the learning curve. Questions are also generated from their documents.

Never used: the 2Wiki corpus and questions, MMLongBench-Doc's documents and questions, the sample corpus, the plain
corpora under ``benchmarks/data/plain``: the answers are measured on those.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from training.span_reader.questions import passages, sentence_questions

HERE = Path(__file__).parent
SQUAD = HERE / "squad2_fragment.json"
CHECK_ARTICLE = "Victoria_(Australia)"
WRITTEN = HERE / "written"
#: the written corpora kept out of training: the learning curve's check on plain notes
WRITTEN_CHECK = ("set_a/08", "set_b/08")
PERMISSIVE = re.compile(r"\b(MIT|BSD|Apache|ISC|PSF|Python Software Foundation|MPL|Mozilla Public|Unlicense|CC0)\b",
                        re.I)  # fmt: skip
_MARKUP = re.compile(r"`{1,3}|\*{1,2}|!?\[([^\]]*)\]\([^)]*\)|<[^>]+>|^#+\s*|^\s*[-*>]\s+|^\s*\d+\.\s+", re.M)


@dataclass(frozen=True)
class Example:
    question: str
    context: str
    answer: str  # "" when the context does not answer
    answer_start: int  # character offset in ``context``; -1 when unanswerable
    source: str  # squad, squad-generated, packages-generated


def squad_articles() -> list[dict]:
    return json.loads(SQUAD.read_text(encoding="utf-8"))["data"]


def squad_examples(check: bool) -> list[Example]:
    """SQuAD's human questions: of the checked article (``check``), or of the others."""
    out = []
    for art in squad_articles():
        if (art["title"] == CHECK_ARTICLE) != check:
            continue
        for para in art["paragraphs"]:
            for qa in para["qas"]:
                if qa.get("is_impossible") or not qa["answers"]:
                    out.append(Example(qa["question"], para["context"], "", -1, "squad"))
                else:
                    a = qa["answers"][0]
                    out.append(Example(qa["question"], para["context"], a["text"], a["answer_start"], "squad"))
    return out


def written_corpora(check: bool) -> list[dict]:
    """The corpora of ``written/`` (sorted by path): the checked ones (``check``), or the others."""
    out = []
    for i, path in enumerate(sorted(WRITTEN.glob("*/*.json"))):
        tag = f"{path.parent.name}/{sorted(path.parent.glob('*.json')).index(path) + 1:02d}"
        if (tag in WRITTEN_CHECK) != check:
            continue
        out.append(json.loads(path.read_text(encoding="utf-8")) | {"_tag": tag, "_order": i})
    return out


def _occurrence(text: str, answer: str, question: str) -> int:
    """Where ``answer`` stands in ``text``: of several mentions, the one whose sentence shares most words with the
    question ("Rust" in the decision's sentence, not in the list of options before it); -1 when absent."""
    asked = set(re.findall(r"\w+", question.lower()))
    best, best_overlap = -1, -1
    for m in re.finditer(re.escape(answer), text):
        a = max(text.rfind(". ", 0, m.start()), 0)
        b = text.find(". ", m.end())
        around = set(re.findall(r"\w+", text[a:b if b >= 0 else len(text)].lower()))
        if len(asked & around) > best_overlap:
            best, best_overlap = m.start(), len(asked & around)
    return best


def written_examples(check: bool) -> list[Example]:
    """The written corpora's own questions, over the document each asks about."""
    out = []
    for corpus in written_corpora(check):
        docs = corpus["documents"]
        for q in corpus["questions"]:
            text = docs[q["document"]]["text"]
            ans = q.get("answer") or ""
            at = _occurrence(text, ans, q["question"]) if ans else -1
            if ans and at < 0:
                continue
            out.append(Example(q["question"], text, ans, at, "written"))
    return out


def package_texts() -> Iterator[tuple[str, str]]:
    """(package, description) of every installed distribution with a permissive license, markup stripped."""
    seen = set()
    for dist in sorted(metadata.distributions(), key=lambda d: (d.metadata["Name"] or "").lower()):
        name = (dist.metadata["Name"] or "").lower()
        if not name or name in seen:
            continue
        seen.add(name)
        lic = " ".join(filter(None, [dist.metadata.get("License-Expression"),
                                     (dist.metadata.get("License") or "")[:200],
                                     *dist.metadata.get_all("Classifier", [])]))  # fmt: skip
        if not PERMISSIVE.search(lic):
            continue
        body = dist.metadata.get_payload() or dist.metadata.get("Description") or ""
        if len(body) < 200:
            continue
        text = _MARKUP.sub(lambda m: m.group(1) or "", body)
        paras = [p for p in re.split(r"\n\s*\n", text) if len(p) > 80 and not re.search(r"[{}=<>|]{2,}|\$ |>>>", p)]
        yield name, "\n\n".join(paras)


def generated(texts: list[tuple[str, list[str]]], source: str, rng: random.Random, nlp, no_answer_share: float,
              ) -> list[Example]:  # fmt: skip
    """Questions from every sentence of every passage; a share of them also paired with another passage of the
    same text that does not hold the answer (the model learns to point at nothing there)."""
    out: list[Example] = []
    for _, paras in texts:
        ps = list(passages(paras))
        if not ps:
            continue
        for i, doc in enumerate(nlp.pipe(ps, batch_size=64)):
            for sent in doc.sents:
                for g in sentence_questions(sent, rng):
                    at = doc.text.find(g.sentence)
                    start = doc.text.find(g.answer, at if at >= 0 else 0)
                    if start < 0:
                        continue
                    out.append(Example(g.question, doc.text, g.answer, start, source))
                    others = [p for j, p in enumerate(ps) if j != i and g.answer.lower() not in p.lower()]
                    if others and rng.random() < no_answer_share:
                        out.append(Example(g.question, rng.choice(others), "", -1, source))
    return out


def training_examples(seed: int, nlp, max_generated: int, max_texts: int = 0) -> tuple[list[Example], dict[str, int]]:
    """Every training example, shuffled with ``seed``, and how many came from each source (``max_texts``: only
    that many paragraphs of each article and packages, for a quick run)."""
    rng = random.Random(seed)
    human = squad_examples(check=False)
    squad_text = [(a["title"], [p["context"] for p in a["paragraphs"]][: max_texts or None]) for a in squad_articles()
                  if a["title"] != CHECK_ARTICLE]  # fmt: skip
    gen_squad = generated(squad_text, "squad-generated", rng, nlp, 0.3)
    pkgs = [(name, re.split(r"\n\s*\n", text)) for name, text in package_texts()][: max_texts or None]
    written = written_examples(check=False)
    written_text = [(c["corpus"], [d["text"] for d in c["documents"]]) for c in written_corpora(check=False)]
    gen_written = generated(written_text[: max_texts or None], "written-generated", rng, nlp, 0.3)
    if max_texts:
        human, written = human[: max_texts * 20], written[: max_texts * 20]
    gen_pkgs = generated(pkgs, "packages-generated", rng, nlp, 0.3)
    rng.shuffle(gen_pkgs)
    gen = gen_squad + gen_written + gen_pkgs
    gen = gen[:max_generated]
    examples = (human + written) * 3 + gen  # the human questions, fewer and better, three times an epoch
    rng.shuffle(examples)
    counts = {"squad": len(human), "written": len(written), "squad-generated": len(gen_squad),
              "written-generated": len(gen_written),
              "packages-generated": min(len(gen_pkgs), max(0, max_generated - len(gen_squad) - len(gen_written))),
              "packages": len(pkgs), "written-corpora": len(written_text)}  # fmt: skip
    return examples, counts
