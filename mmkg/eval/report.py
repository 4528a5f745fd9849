"""Markdown tables of an evaluation: every method side by side, per scope; evidence-source breakdown; speed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mmkg.eval.runner import EvalReport


def _table(header: list[str], rows: list[list[str]], text_columns: int = 1) -> str:
    """The first ``text_columns`` are left-aligned, the rest (numbers) right-aligned."""
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i < text_columns else "---:" for i in range(len(header))) + "|",
    ]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _f(x: float) -> str:
    return f"{x:.3f}"


def markdown(r: EvalReport) -> str:
    unit = "page" if r.by_source or "document" in r.scopes else "passage"
    out = [
        f"# Retrieval evaluation: {r.dataset}",
        "",
        f"Index `{r.index['root']}` version `{r.index['version']}` ({r.index['encoder']}); "
        f"{r.n_questions} questions, {r.n_scored} scored (answerable); {r.depth} chunks retrieved per query, "
        f"ranked by {unit} (a {unit} ranks at its best chunk). Run at {r.created_at}.",
    ]
    if r.unreachable:
        out += ["", f"{len(r.unreachable)} relevant {unit}(s) have no chunk in the index, so no method can retrieve "
                f"them: {', '.join(r.unreachable[:12])}{' ...' if len(r.unreachable) > 12 else ''}"]  # fmt: skip
    for scope in r.scopes:
        title = {"corpus": "whole corpus", "document": "within the question's own document"}[scope]
        header = ["method", *(f"R@{k}" for k in r.ks), *(f"P@{k}" for k in r.ks), "MRR", "p50 ms", "p95 ms"]
        rows = []
        for name in r.methods:
            m = r.summary[scope][name]
            lat = r.latency[name]
            rows.append([
                name, *(_f(m[f"recall@{k}"]) for k in r.ks), *(_f(m[f"perfect@{k}"]) for k in r.ks), _f(m["mrr"]),
                f"{lat['p50_ms']:.1f}", f"{lat['p95_ms']:.1f}",
            ])  # fmt: skip
        out += ["", f"## {unit.capitalize()} retrieval, {title}", "",
                "R@k: recall@k; P@k: perfect retrieval@k (every relevant unit in the top k).", "",
                _table(header, rows)]  # fmt: skip
        if r.by_source.get(scope):
            out += ["", f"### Recall by evidence source, {title}", ""]
            sources = sorted({s for by_s in r.by_source[scope].values() for s in by_s})
            counts = {s: int(next(iter(r.by_source[scope].values()))[s]["n"]) for s in sources}
            header = ["method", "k", *(f"{s} (n={counts[s]})" for s in sources)]
            rows = []
            for name in r.methods:
                by_s = r.by_source[scope][name]
                for k in r.ks:
                    rows.append([name, str(k), *(_f(by_s[s][f"recall@{k}"]) for s in sources)])
            out.append(_table(header, rows))
    out += head_to_head(r, headline_metric(r))
    out += ["", "## Speed", "", speed_markdown(r.build, r.latency, r.setup_s, r.open_s)]
    return "\n".join(out) + "\n"


def headline_metric(r: EvalReport) -> str:
    """Perfect@8 for multi-passage questions (2Wiki), recall@5 for evidence pages (MMLongBench-Doc)."""
    k = 8 if 8 in r.ks else r.ks[-1]
    if r.by_source or "document" in r.scopes:
        return f"recall@{5 if 5 in r.ks else r.ks[-1]}"
    return f"perfect@{k}"


# Whether the build started without the model caches; results files from before the flag say nothing.
_CACHE_NOTE = {
    True: " Cold build: the parse, vector and OCR caches were cleared first.",
    False: " Warm build: unchanged chunks, texts and images came from the parse, vector and OCR caches, "
    "so stage times can understate a fresh build.",
    None: "",
}


def _rate(x: float) -> str:
    return f"{x:.2g}" if x < 1 else f"{x:,.1f}"


BASELINES = ("bm25", "dense")


def head_to_head(r: EvalReport, metric: str, limit: int = 8) -> list[str]:
    """Each strategy (graph presets, mKG-RAG, ...) against each baseline (BM25, dense), question by question,
    with the questions the best strategy loses."""
    graphs = [m for m in r.methods if m not in BASELINES]
    baselines = [m for m in r.methods if m in BASELINES]
    if not graphs or not baselines:
        return []
    scope = "document" if "document" in r.scopes else "corpus"
    graph = max(graphs, key=lambda g: r.summary[scope][g][metric])  # the preset a user would pick here
    out = ["", f"## Question by question: {metric} ({scope} scope)", "",
           "Wins / ties / losses of each strategy against each baseline on the same questions.", ""]  # fmt: skip
    rows = []
    for g in graphs:
        for b in baselines:
            win = tie = loss = 0
            for q in r.questions:
                res = q["results"].get(scope, {})
                if g in res and b in res:
                    d = res[g]["metrics"][metric] - res[b]["metrics"][metric]
                    win, tie, loss = win + (d > 0), tie + (d == 0), loss + (d < 0)
            rows.append([g, b, str(win), str(tie), str(loss)])
    out.append(_table(["strategy", "baseline", "wins", "ties", "losses"], rows, text_columns=2))
    lost = []
    for q in r.questions:
        res = q["results"].get(scope, {})
        if graph not in res:
            continue
        mine = res[graph]["metrics"][metric]
        better = [b for b in baselines if b in res and res[b]["metrics"][metric] > mine]
        if better:
            lost.append((q, better))
    if lost:
        out += ["", f"Questions where `{graph}` (the best strategy here) loses to a baseline "
                f"({len(lost)}; first {min(limit, len(lost))}). *Linked* is what the query linked to (seeded), "
                "*missed* the relevant units not in the top k; "
                "`results.json` has every ranking.", ""]  # fmt: skip
        rows = []
        k = int(metric.split("@")[1])
        for q, better in lost[:limit]:
            res = q["results"][scope][graph]
            missed = [u for u in q["relevant"] if u not in res["ranked"][:k]]
            linked = ", ".join(res.get("why", {}).get("linked_entities", [])) or "none"
            rows.append([q["id"], q["question"].replace("|", "/"), ", ".join(better), linked,
                         "; ".join(missed).replace("|", "/")])  # fmt: skip
        out.append(_table(["id", "question", "beaten by", "linked", "missed"], rows, text_columns=5))
    return out


def speed_markdown(
    build: dict[str, Any] | None, latency: dict[str, dict[str, float]], setup_s: dict[str, float], open_s: float
) -> str:
    parts = []
    if build is None:
        parts.append("Existing index evaluated as given (no build in this run).")
    elif build.get("reused"):
        parts.append(f"Index re-used: version `{build['index_version']}` was published from these corpus files.")
    else:
        rows = [[step, f"{sec:.1f}"] for step, sec in sorted(build["steps"].items(), key=lambda kv: -kv[1])]
        rows.append(["**publish_index job (wall)**", f"{build['publish_s']:.1f}"])
        rows.append(["**build wall clock**", f"{build['wall_s']:.1f}"])
        parts += [
            _table(["build stage (Dagster step, summed over partitions)", "seconds"], rows),
            "",
            f"{build['documents']:,} documents ({_rate(build['documents_per_s'])}/s), "
            f"{build['pages']:,} pages ({_rate(build['pages_per_s'])}/s), "
            f"{build['chunks']:,} chunks over {len(build['partitions'])} partition(s); "
            f"peak memory {build['peak_bytes'] / 2**30:.2f} GiB (process tree)." + _CACHE_NOTE[build.get("cold")],
        ]
    parts += [
        "",
        f"Index opened in {open_s:.1f} s. Query latency over every call of the run (after one warm-up call):",
        "",
        _table(
            ["method", "setup s", "p50 ms", "p95 ms", "mean ms", "calls"],
            [
                [
                    n,
                    f"{setup_s.get(n, 0.0):.2f}",
                    f"{v['p50_ms']:.1f}",
                    f"{v['p95_ms']:.1f}",
                    f"{v['mean_ms']:.1f}",
                    str(int(v["n"])),
                ]
                for n, v in latency.items()
            ],
        ),
    ]
    return "\n".join(parts)
