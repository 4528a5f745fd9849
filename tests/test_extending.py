"""The worked examples of docs/extending.md, run: each adds a backend in one file through its registry.

Each example module is loaded from ``docs/examples/`` as a plugin would be (its import registers it), used
through the same path the built-in backends take (``load_encoder``, ``get_generator`` and ``answer``,
``GroundingResource``, ``ingest_partition``), and unregistered afterwards so no other test sees it.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from PIL import Image

from mmkg.plugins import Registry

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"mmkg_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def plugin(request: pytest.FixtureRequest) -> Iterator[ModuleType]:
    """Load the example named by the test's parameter; unregister what it registered afterwards."""
    name, registry, key = request.param
    module = _load(name)
    try:
        yield module
    finally:
        registry.unregister(key)
        sys.modules.pop(f"mmkg_example_{name}", None)


def _registry(path: str) -> Registry:
    module, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(module), attr)


@pytest.mark.parametrize("plugin", [("hashing_encoder", _registry("mmkg.encoders.ENCODERS"), "hashing")],
                         indirect=True)  # fmt: skip
def test_an_encoder_backend_in_one_file(plugin: ModuleType, tmp_path: Path):
    from mmkg.encoder_base import ImageInput
    from mmkg.encoders import ENCODERS, load_encoder

    assert "hashing" in ENCODERS and "feature-hashed" in {e.name: e.help for e in ENCODERS}["hashing"]
    enc = load_encoder("hashing", "256")
    vecs = enc.encode_text(["the red ferry sails at dawn", "a red ferry sails", "quarterly revenue rose"])
    assert vecs.shape == (3, 256) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2]  # shared words, nearer
    picture = tmp_path / "red_ferry.png"
    Image.new("RGB", (32, 32), (200, 20, 20)).save(picture)
    (image_vec,) = enc.encode_images([ImageInput(path=picture, texts=["A red ferry at the quay"])])
    assert image_vec @ vecs[1] > image_vec @ vecs[2]  # what is read about a picture is its surrogate text
    with pytest.raises(ValueError, match="choose one of clip, hashing, text"):
        load_encoder("nosuch")


@pytest.mark.parametrize("plugin", [("headline_generator", _registry("mmkg.llm.GENERATORS"), "headline")],
                         indirect=True)  # fmt: skip
def test_a_generation_backend_in_one_file(plugin: ModuleType, art_index):
    from typer.testing import CliRunner

    from mmkg.cli import app
    from mmkg.generation import answer, get_generator

    a = answer(art_index, "Where was Margit Holm born?", get_generator("headline"))
    assert a.backend == "headline" and a.text.startswith("Uppsala [") and a.text.endswith("].")
    cited = int(a.text.split("[")[1].split("]")[0])
    assert [c.label for c in a.citations] == [cited] and a.invalid_citations == 0
    # the CLI takes a registered backend by name, as it takes the built-in ones
    r = CliRunner().invoke(app, ["ask", "Where was Margit Holm born?", "--backend", "headline", "--index",
                                 str(art_index.root)])  # fmt: skip
    assert r.exit_code == 0 and "Uppsala [" in r.output, r.output


@pytest.mark.parametrize("plugin", [("colour_grounder", _registry("mmkg.vision.grounders.GROUNDERS"), "colour")],
                         indirect=True)  # fmt: skip
def test_a_grounding_backend_in_one_file(plugin: ModuleType, tmp_path: Path):
    from mmkg.vision.base import EntityPrompt, GroundingTask
    from resources.grounding import GroundingResource

    picture = tmp_path / "harbour.png"
    img = Image.new("RGB", (200, 100), (245, 245, 240))
    img.paste((210, 25, 25), (120, 20, 180, 80))  # a red door, 60 x 60
    img.save(picture)
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not a picture")
    grounding = GroundingResource(backends=["ocr", "colour"])  # the resource validates the name
    (colour,) = [g for g in grounding.grounders(tmp_path, ocr=object()) if getattr(g, "name", "") == "colour"]
    entities = [EntityPrompt("red_door", "the red door"), EntityPrompt("blue_boat", "blue boat")]
    outcomes = list(colour.ground([GroundingTask("img1", picture, entities), GroundingTask("img2", broken, entities)],
                                  tau=0.5))  # fmt: skip
    (red,) = outcomes[0].detections
    assert (red.entity_key, red.label, red.backend) == ("red_door", "red", "colour")
    assert red.box == (120.0, 20.0, 180.0, 80.0) and red.score > 0.5
    assert outcomes[1].detections == [] and "cannot read broken.png" in outcomes[1].error


@pytest.mark.parametrize("plugin", [("html_format", _registry("mmkg.ingest.formats.FORMATS"), "html")],
                         indirect=True)  # fmt: skip
def test_a_document_format_in_one_file(plugin: ModuleType, tmp_path: Path):
    from mmkg.api.documents import CorpusFolder
    from mmkg.ingest import ImageStore, ingest_partition
    from mmkg.ingest.partition import supported_extensions

    part = tmp_path / "corpus" / "web"
    part.mkdir(parents=True)
    Image.new("RGB", (40, 30), (30, 60, 200)).save(part / "boat.png")
    (part / "harbour.html").write_text(
        "<html><head><title>The Harbour</title><style>p {color: red}</style></head><body>"
        "<nav><a href='/'>Home</a></nav><h1>Harbour guide</h1>"
        "<p>The ferry Nordlys leaves the harbour at seven.</p><img src='boat.png' alt='the blue boat'>"
        "<ul><li>Tickets at the quay</li></ul><script>track()</script></body></html>",
        encoding="utf-8",
    )  # fmt: skip
    (part / "empty.htm").write_text("<html><body><script>x()</script></body></html>", encoding="utf-8")
    res = ingest_partition(tmp_path / "corpus", "web", ImageStore(tmp_path / "data"))
    (doc,) = res.documents.filter(res.documents["kind"] == "html").to_dicts()
    assert doc["title"] == "The Harbour"
    assert doc["text"] == "Harbour guide\n\nThe ferry Nordlys leaves the harbour at seven.\n\nTickets at the quay"
    assert res.images.height == 1  # the linked picture, stored once (not again as a standalone file)
    (rejected,) = res.rejected.to_dicts()
    assert rejected["source_path"].endswith("empty.htm") and "holds no text" in rejected["reason"]
    assert ".html" in supported_extensions()
    assert CorpusFolder(tmp_path / "corpus").safe_name("page.html") == "page.html"  # uploads accept it too


def test_a_taken_name_or_extension_is_refused():
    from mmkg.encoders import ENCODERS
    from mmkg.ingest.formats import register_format

    with pytest.raises(ValueError, match="encoder backend 'text' is already registered"):
        ENCODERS.register("text", lambda model, device, runtime: None)
    with pytest.raises(ValueError, match=r"\.md already read by format 'markdown'"):
        register_format("my-markdown", (".md",))(lambda path, data, rel, limits: ([], []))


def test_a_retrieval_strategy_in_one_file(tmp_path: Path):
    """docs/examples/read_on_strategy.py: registered by its import, chosen by name like the built-in strategies
    (Python API and CLI), its parameters checked, and the chunk that reads on after a hit retrieved with it."""
    from dagster import DagsterInstance
    from indexing import build
    from typer.testing import CliRunner

    from mmkg.cli import app
    from mmkg.index import Index
    from mmkg.retrieval import STRATEGIES, describe, retrieve

    log = " ".join(f"In {1800 + i} the harbour office logged {3 * i + 4} cargoes of timber, grain and salt." for i in
                   range(12))  # fmt: skip (12: the chunk of 200 tokens ends after the sentence below)
    corpus = tmp_path / "corpus" / "sea"
    corpus.mkdir(parents=True)
    (corpus / "brandt.md").write_text(
        f"# Harbour records\n\n{log} In 1851 Mary Brandt became the first woman to captain a clipper ship.\n\n"
        f"On that voyage, HX-17, the vessel reached Lima in 96 days. {log}\n", encoding="utf-8")  # fmt: skip
    (corpus / "registers.md").write_text("# Registers\n\nShip registers list every vessel by its home port.\n",
                                         encoding="utf-8")  # fmt: skip
    build(tmp_path / "corpus", tmp_path / "data", DagsterInstance.ephemeral())
    index = Index.open(tmp_path / "data" / "index")
    own = index.chunks.filter(index.chunks["source_path"] == "sea/brandt.md").sort("chunk_index")
    at = next(i for i, text in enumerate(own["text"]) if "first woman" in text)
    first, second = own["chunk_id"][at], own["chunk_id"][at + 1]  # the paragraph after it opens the next chunk
    assert own["text"][at + 1].startswith("On that voyage, HX-17")

    _load("read_on_strategy")
    try:
        assert "readon" in STRATEGIES and "readon" in {d["name"] for d in describe()}
        question = "Who was the first woman to captain a clipper ship?"
        plain = retrieve(index, text=question, k=2, strategy="readon:bm25")
        read_on = retrieve(index, text=question, k=2, strategy="readon")
        assert plain.chunks[0].chunk_id == first and plain.chunks[1].source_path == "sea/registers.md"
        assert [c.chunk_id for c in read_on.chunks] == [first, second]  # "On that voyage, HX-17, ..." follows
        assert "HX-17" in read_on.chunks[1].text and "1 chunk(s) ranked up" in read_on.notes[0]
        with pytest.raises(ValueError, match="share must be within"):
            retrieve(index, text=question, strategy="readon", share=2.0)
        r = CliRunner().invoke(app, ["query", question, "--strategy", "readon", "--k", "2", "--index",
                                     str(index.root)])  # fmt: skip
        assert r.exit_code == 0 and "HX-17" in r.output and "strategy readon (default)" in r.output, r.output
    finally:
        del STRATEGIES["readon"]
        sys.modules.pop("mmkg_example_read_on_strategy", None)
    assert "readon" not in STRATEGIES
