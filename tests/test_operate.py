"""Operating an index from the CLI: SQL over every table (DuckDB views), graph export, argument checks.

Runs on the hand-written art corpus built through the real Dagster assets (``conftest.art``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from conftest import ArtCorpus
from typer.testing import CliRunner

from mmkg.cli import app
from mmkg.index import Index
from mmkg.tables import connect, views


def _cli(*args: str):
    return CliRunner().invoke(app, list(args))


def test_connect_gives_a_view_per_table_and_the_index_as_schema_idx(art: ArtCorpus):
    con = connect(art.data)
    found = views(art.data)
    assert {"chunks", "entity_mentions", "relations", "cross_modal_links", "entity_catalog"} <= set(found)
    assert {"idx.chunks", "idx.relations", "idx.documents"} <= set(found)
    counts = dict(con.sql("SELECT partition, count(*) FROM chunks GROUP BY partition").fetchall())
    for part in ("art", "other"):
        assert counts[part] == pl.read_parquet(art.data / "tables" / "chunks" / f"{part}.parquet").height
    idx = Index.open(art.data / "index", encoder=False)
    assert con.sql("SELECT count(*) FROM idx.chunks").fetchall()[0][0] == idx.n_chunks


def test_views_read_partitions_written_with_different_columns(art: ArtCorpus, tmp_path: Path):
    data = tmp_path / "data"
    shutil.copytree(art.data / "tables", data / "tables")
    other = data / "tables" / "chunks" / "other.parquet"
    pl.read_parquet(other).drop("text_source").write_parquet(other)  # as an older mmkg wrote it
    rows = (
        connect(data).sql("SELECT partition, count(*), count(text_source) FROM chunks GROUP BY 1 ORDER BY 1").fetchall()
    )
    assert rows[0][0] == "art" and rows[0][1] == rows[0][2] > 0  # art has the column
    assert rows[1][0] == "other" and rows[1][1] > 0 and rows[1][2] == 0  # other lacks it: nulls, no error


def test_cli_sql(art: ArtCorpus, tmp_path: Path):
    out = _cli("sql", "SELECT partition, count(*) AS n FROM chunks GROUP BY partition ORDER BY 1", "--data-root",
               str(art.data), "--json")  # fmt: skip
    assert out.exit_code == 0, out.output
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["partition"] for r in rows] == ["art", "other"] and all(r["n"] > 0 for r in rows)
    out = _cli("sql", "SELECT name FROM entity_catalog WHERE name = 'Margit Holm'", "--data-root", str(art.data))
    assert out.exit_code == 0 and "Margit Holm" in out.output
    out = _cli("sql", "SELEC 1", "--data-root", str(art.data))
    assert out.exit_code == 2 and "syntax error" in out.output and "Traceback" not in out.output
    assert len(out.output.strip().splitlines()) == 1 and "^" not in out.output  # no echoed statement, no carets
    out = _cli("sql", "SELECT * FROM chunkz", "--data-root", str(art.data))
    assert out.exit_code == 2 and len(out.output.strip().splitlines()) == 1, out.output
    assert 'Did you mean "chunks"?' in out.output and "SHOW TABLES" in out.output
    out = _cli("sql", "SELECT 1", "--data-root", str(tmp_path / "empty"))
    assert out.exit_code == 2 and "no tables under" in out.output


@pytest.mark.parametrize("fmt", ["graphml", "json", "parquet"])
def test_graph_export_round_trips(art: ArtCorpus, tmp_path: Path, fmt: str):
    idx = Index.open(art.data / "index", encoder=False)
    n, m = idx.graph.n, idx.graph.adjacency.nnz // 2
    target = tmp_path / ("graph" if fmt == "parquet" else f"graph.{fmt}")
    out = _cli("graph", "export", "--index", str(art.data / "index"), "--format", fmt, "--out", str(target))
    assert out.exit_code == 0 and f"{n:,} nodes, {m:,} edges" in out.output, out.output
    if fmt == "graphml":
        import igraph as ig

        g = ig.Graph.Read_GraphML(str(target))
        assert (g.vcount(), g.ecount()) == (n, m) and "Margit Holm" in g.vs["label"]
        assert set(g.vs["kind"]) <= {"chunk", "image", "entity"}
        names = g.vs["name"]
        edges = [{"source": names[e.source], "target": names[e.target], **e.attributes()} for e in g.es]
    elif fmt == "json":
        import networkx as nx

        g = nx.node_link_graph(json.loads(target.read_text()), edges="links")
        assert (g.number_of_nodes(), g.number_of_edges()) == (n, m)
        edges = [{"source": a, "target": b, **data} for a, b, data in g.edges(data=True)]
    else:
        nodes, edges = pl.read_parquet(target / "nodes.parquet"), pl.read_parquet(target / "edges.parquet")
        assert nodes.height == n and edges.height == m
        assert set(edges["source"]) | set(edges["target"]) <= set(nodes["id"]) and (edges["weight"] > 0).all()
        edges = edges.to_dicts()
    # every edge says what it means; each entity-entity edge carries the predicate and the sentence of a relation
    # the index holds between those two entities
    kinds = {e["kind"] for e in edges}
    assert {"mentions", "relation"} <= kinds <= {"mentions", "relation", "shows", "depicts"}
    assert all(e["predicate"] for e in edges)
    relations = idx.payload("relations").join(idx.sentences.select("sentence_id", "text"), on="sentence_id")
    said = {(r["subject_key"], r["object_key"], r["predicate"], r["text"]) for r in relations.to_dicts()}
    labelled = [e for e in edges if e["kind"] == "relation"]
    entities = set(idx.graph.nodes.filter(pl.col("kind") == "entity")["key"])
    assert labelled and len(labelled) == sum(1 for e in edges if {e["source"], e["target"]} <= entities)
    for e in labelled:
        assert {e["subject"], e["object"]} == {e["source"], e["target"]}
        first = e["predicate"].split("; ")[0].removeprefix("not ")
        assert (e["subject"], e["object"], first, e["sentence"]) in said, e
    out = _cli("graph", "export", "--index", str(art.data / "index"), "--format", "gexf", "--out", str(target))
    assert out.exit_code == 2 and "unknown format 'gexf'" in out.output


def test_query_arguments_are_checked(art: ArtCorpus):
    index = str(art.data / "index")
    out = _cli("query", "x", "--k", "0", "--index", index)
    assert out.exit_code == 2 and "--k" in out.output
    out = _cli("query", "x", "--partition", "mars", "--index", index)
    assert out.exit_code == 2 and "no partition 'mars' in this index; partitions: ['art', 'other']" in out.output


def test_index_info_loads_no_model_and_version_prints(art, monkeypatch: pytest.MonkeyPatch):
    """Metadata commands read tables only: `mmkg index info` must not load the encoder (it took 21 s on a busy
    machine); `mmkg --version` answers at once."""
    import mmkg.encoders

    def refuse(*args, **kwargs):
        raise AssertionError("index info loaded a model")

    monkeypatch.setattr(mmkg.encoders, "load_encoder", refuse)
    res = CliRunner().invoke(app, ["index", "info", "--index", str(art.data / "index"), "--json"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.stdout)
    assert info["version"].startswith("v") and info["ann_indexed"] == []  # the sample is searched in memory
    res = CliRunner().invoke(app, ["--version"])
    assert res.exit_code == 0 and res.output.startswith("mmkg ")


def test_index_info_reads_the_manifest_only(art, tmp_path: Path):
    """`mmkg index info` imports neither LanceDB nor a model stack: it answered in 2.4 s, now in about 0.3 s."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from mmkg.cli import app\n"
        f"try:\n    app(['index', 'info', '--json', '--index', {str(art.data / 'index')!r}])\n"
        "except SystemExit as e:\n    assert e.code in (0, None), e.code\n"
        "heavy = sorted(m for m in ('lancedb', 'torch', 'transformers', 'dagster') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["partitions"] == ["art", "other"]
