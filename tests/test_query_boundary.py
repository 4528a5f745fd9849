"""One query boundary: what the reader refuses, it refuses the same way from Python and the CLI (the REST API's
cases are in ``tests/test_api.py``). Each case is a clear error naming the problem; the CLI exits 2 with one
line, never a traceback. Filter values are compared as values: quotes and SQL fragments are just unknown names.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from mmkg.cli import app
from mmkg.query import MAX_QUERY_CHARS, Query, QueryError
from mmkg.retrieval import retrieve


def _png(path: Path, size: tuple[int, int], mode: str = "1") -> Path:
    Image.new(mode, size).save(path)
    return path


@pytest.fixture(scope="module")
def pictures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("pictures")
    (d / "empty.png").write_bytes(b"")
    (d / "text.png").write_text("this is not a picture")
    buf = io.BytesIO()
    Image.new("RGB", (64, 64), "red").save(buf, format="PNG")
    (d / "truncated.png").write_bytes(buf.getvalue()[:60])
    return {
        "empty": d / "empty.png", "text": d / "text.png", "truncated": d / "truncated.png",
        "bomb": _png(d / "bomb.png", (15_000, 15_000)),  # 225 megapixels, a few kB on disk
        "big": _png(d / "big.png", (8_000, 6_000)),  # 48 megapixels: over the 40 MP cap, under PIL's bomb limit
    }  # fmt: skip


# (name, keyword arguments of mmkg.retrieval.retrieve, CLI arguments, what the error says)
CASES = [
    ("negative k", {"text": "mill", "k": -2}, ["mill", "--k", "-2"], "k must be an integer from 1|--k.*greater than"),
    ("fractional k", {"text": "mill", "k": 2.5}, None, "k must be an integer from 1"),
    ("k as a string", {"text": "mill", "k": "5"}, ["mill", "--k", "five"], "k must be an integer|--k.*valid integer"),
    ("k too large", {"text": "mill", "k": 5000}, ["mill", "--k", "5000"], "k must be an integer from 1|--k.*1000"),
    ("empty text", {"text": ""}, [""], "needs text|give a text query"),
    ("blank text", {"text": "  \n\t "}, ["  \n\t "], "needs text"),
    ("lone surrogate", {"text": "mill \ud800"}, None, "lone surrogate at character 5"),
    ("text too long", {"text": "w " * MAX_QUERY_CHARS}, None, "over the limit of 10,000"),
    ("filter of the wrong type", {"text": "mill", "filters": {"partition": 7}}, None, "takes a string or a list"),
    ("unknown filter key", {"text": "mill", "filters": {"colour": "red"}}, None, "unknown filter(s) ['colour']"),
    ("unknown partition", {"text": "mill", "filters": {"partition": "artt"}}, ["mill", "--partition", "artt"],
     "no partition|'art'"),
    ("SQL in a filter value", {"text": "mill", "filters": {"doc_id": "' OR 1=1 --"}}, ["mill", "--doc", "' OR 1=1 --"],
     "no doc_id"),
    ("negative top-k override", {"text": "mill", "text_topk_chunk": -1}, ["mill", "--param", "text_topk_chunk=-1"],
     "top-k for chunk must be an integer of at least 1"),
    ("unknown strategy", {"text": "mill", "strategy": "nope"}, ["mill", "--strategy", "nope"], "unknown strategy"),
]  # fmt: skip
PICTURE_CASES = [
    ("empty", "not a readable picture"),
    ("text", "not a readable picture"),
    ("truncated", "corrupt or truncated"),
    ("bomb", "too large to decode safely"),
    ("big", "8000x6000 = 48,000,000 px, over the limit of 40,000,000 px"),
]


@pytest.mark.parametrize(("name", "kwargs", "argv", "message"), CASES, ids=[c[0] for c in CASES])
def test_python_refuses_with_the_reason(art_index, name: str, kwargs: dict, argv: list | None, message: str):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        retrieve(art_index, **kwargs)


@pytest.mark.parametrize(("name", "kwargs", "argv", "message"), [c for c in CASES if c[2] is not None],
                         ids=[c[0] for c in CASES if c[2] is not None])  # fmt: skip
def test_cli_exits_2_with_one_line(art, name: str, kwargs: dict, argv: list, message: str):
    import re

    res = CliRunner().invoke(app, ["query", *argv, "--index", str(art.data / "index")])
    out = " ".join(res.output.split())
    assert res.exit_code == 2, res.output
    assert re.search(message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\["), out), out
    assert "Traceback" not in res.output and (res.exception is None or isinstance(res.exception, SystemExit))


@pytest.mark.parametrize(("kind", "message"), PICTURE_CASES, ids=[c[0] for c in PICTURE_CASES])
def test_unreadable_or_huge_image_queries(art, art_index, pictures: dict[str, Path], kind: str, message: str):
    import re

    with pytest.raises(QueryError) as err:
        retrieve(art_index, image=pictures[kind])
    assert re.search(message, str(err.value)), str(err.value)
    res = CliRunner().invoke(app, ["query", "--image", str(pictures[kind]), "--index", str(art.data / "index")])
    assert res.exit_code == 2 and re.search(message, " ".join(res.output.split())), res.output


def test_long_queries_from_a_file_or_stdin(art, tmp_path: Path):
    index = str(art.data / "index")
    long_q = tmp_path / "q.txt"
    long_q.write_text("windmill " * 2000)  # 18,000 characters: too long, said so
    res = CliRunner().invoke(app, ["query", "--query-file", str(long_q), "--index", index])
    assert res.exit_code == 2 and "over the limit of 10,000" in " ".join(res.output.split())
    res = CliRunner().invoke(app, ["query", "--query-file", "-", "--index", index, "--k", "1"],
                             input="Who painted The Red Mill?")  # fmt: skip
    assert res.exit_code == 0 and "Red Mill" in res.output
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("caf\xe9".encode("latin-1"))
    res = CliRunner().invoke(app, ["query", "--query-file", str(bad), "--index", index])
    assert res.exit_code == 2 and "not UTF-8" in " ".join(res.output.split())


def test_query_text_is_normalized():
    decomposed = "Cafe\u0301"  # e + combining accent
    assert Query(text=decomposed).text == "Caf\u00e9"
    assert Query(text="  mill  ").text == "  mill  "  # kept as typed apart from the Unicode form
    with pytest.raises(QueryError, match="not a file"):
        Query(image=Path("/no/such/picture.png"))
