from __future__ import annotations

import io
import json
import os
import signal
import socket
import string
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import matplotlib
import pytest
from PIL import Image

matplotlib.use("Agg")
# The suite tests the rule reader's answers as they are, and the reading model (on by default in mmkg ask) in
# tests/test_model_reader.py, which turns it on: loading it costs seconds in every process that answers.
os.environ.setdefault("MMKG_READER_MODEL", "off")
# Likewise speech recognition (on by default, with the installed Whisper base) runs in tests/test_speech.py; the media
# tests ingest the committed recordings through their subtitles, or without a transcript where they have none.
os.environ.setdefault("MMKG_ASR_MODEL", "off")

PROJECT = Path(__file__).resolve().parent.parent
SAMPLE_CORPUS = PROJECT / "sample_corpus"
# what tests/data/mg2_sample_golden.json records per preset: the paper's one-round pipeline, so our later steps
# (a second hop, the page-sentence re-ranking) are switched off there and tested on their own
MG2_GOLDEN_OFF: dict[str, dict[str, float]] = {
    "default": {"bridge_weight": 0.0},
    "longdoc": {"page_sentence_weight": 0.0},
}
MPL_SAMPLE = Path(matplotlib.get_data_path()) / "sample_data"
SHARED = PROJECT.parent / "shared"


@pytest.fixture(scope="session")
def photo_path() -> Path:
    """A real photograph shipped with matplotlib (Grace Hopper, U.S. Navy, public domain)."""
    return MPL_SAMPLE / "grace_hopper.jpg"


@pytest.fixture(scope="session")
def photo(photo_path: Path) -> Image.Image:
    return Image.open(photo_path).convert("RGB")


def write_pdf(path: Path, pages: list[str], image: Image.Image | None = None) -> Path:
    """A real PDF with a text layer per page (matplotlib's PDF backend) and an optional embedded photo."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    with PdfPages(path, metadata={"CreationDate": None, "Title": "Test document"}) as pdf:
        for i, text in enumerate(pages):
            fig = plt.figure(figsize=(6, 8))
            fig.text(0.08, 0.92, text, wrap=True, fontsize=11, va="top")
            if image is not None and i == 0:
                ax = fig.add_axes((0.2, 0.1, 0.6, 0.45))
                ax.imshow(image)
                ax.axis("off")
            pdf.savefig(fig)
            plt.close(fig)
    return path


def build_index(tmp_path_factory: pytest.TempPathFactory, name: str, files: dict[str, str | list[str]]):
    """An index built through the Dagster jobs from ``files`` written into a fresh corpus folder (relative path ->
    a text file's content, or a PDF's pages as a list, ``write_pdf``), opened."""
    from dagster import DagsterInstance
    from indexing import build

    from mmkg.index import Index

    corpus = tmp_path_factory.mktemp(f"{name}-corpus")
    for rel, content in files.items():
        path = corpus / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, list):
            write_pdf(path, content)
        else:
            path.write_text(content)
    data = tmp_path_factory.mktemp(f"{name}-data")
    build(corpus, data, DagsterInstance.ephemeral())
    return Index.open(data / "index")


@pytest.fixture
def jpeg_bytes(photo: Image.Image) -> bytes:
    buf = io.BytesIO()
    photo.save(buf, format="JPEG", quality=85)
    return buf.getvalue()


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to reach the network fails the test: model loading must stay offline."""

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


# -- a tiny random CLIP, saved and loaded by path: the real transformers loading code, offline ------

TINY_DIM = 16


def tiny_tokenizer():
    """A character-level CLIP BPE tokenizer (no merges), built offline."""
    from transformers import CLIPTokenizer

    chars = list(string.ascii_lowercase + string.digits + ".,'!?-")
    tokens = ["<|startoftext|>", "<|endoftext|>", *chars, *(c + "</w>" for c in chars)]
    return CLIPTokenizer(vocab={tok: i for i, tok in enumerate(tokens)}, merges=[])


def tiny_configs(tokenizer, vision: dict) -> tuple[dict, dict]:
    text = dict(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        max_position_embeddings=32,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return text, dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, **vision)


@pytest.fixture(scope="module")
def tiny_clip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    torch.manual_seed(0)
    tokenizer = tiny_tokenizer()
    text, vision = tiny_configs(tokenizer, dict(image_size=32, patch_size=8))
    model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=TINY_DIM))
    image_processor = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    path = tmp_path_factory.mktemp("tiny-clip")
    model.save_pretrained(path)
    CLIPProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny_clip(tiny_clip_dir: Path):
    from mmkg.encoders import ClipEncoder

    return ClipEncoder(str(tiny_clip_dir), device="cpu")


def stop_process_group(proc: subprocess.Popen, timeout: float = 30) -> None:
    """Stop a process group a test started (a server and what it spawned): SIGTERM, then SIGKILL."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass


def wait_until_up(
    proc: subprocess.Popen, ready: Callable[[], bool], what: str, log: Path, timeout: float, interval: float = 0.3
) -> None:
    """Poll ``ready`` (connection errors count as not yet) until it holds; if ``proc`` exits or ``timeout``
    passes first, stop its process group and raise with the tail of its ``log``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if ready():
                return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_process_group(proc)
            raise RuntimeError(f"{what} did not start; log {log}:\n{log.read_text()[-3000:]}")
        time.sleep(interval)


def http_ok(url: str, timeout: float = 2) -> bool:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.status == 200


# -- a small hand-written corpus, indexed once per session through the real Dagster assets ------------

DOCS = {
    "art/blue_harbour.md": "# The Blue Harbour\n\nThe Blue Harbour is an oil painting of fishing boats at dawn. "
    "Margit Holm painted The Blue Harbour in 1921. The painting hangs in the National Museum.\n",
    "art/margit_holm.md": "# Margit Holm\n\nMargit Holm was born in Uppsala in 1890. She studied at the Royal Academy "
    "in Stockholm and taught drawing for thirty years.\n",
    "art/erik_sand.md": "# Erik Sand\n\nErik Sand was born in Malmo in 1885. He was a sculptor who worked in bronze "
    "and marble.\n",
    "art/red_mill.md": "# The Red Mill\n\nThe Red Mill is a watercolour of a windmill. Erik Sand painted The Red Mill "
    "in 1910.\n",
    "other/lakes.md": "# Swedish lakes\n\nVanern is the largest lake in Sweden. Vattern is the second largest lake, "
    "and its water is very clear.\n",
}


@dataclass
class ArtCorpus:
    """The hand-written corpus folder and the data root its index was built into."""

    corpus: Path
    data: Path


@pytest.fixture(scope="session")
def art(tmp_path_factory: pytest.TempPathFactory) -> ArtCorpus:
    corpus = tmp_path_factory.mktemp("art-corpus")
    for rel, text in DOCS.items():
        (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
        (corpus / rel).write_text(text)
    data = tmp_path_factory.mktemp("art-data")
    from dagster import DagsterInstance
    from indexing import build

    build(corpus, data, DagsterInstance.ephemeral())
    return ArtCorpus(corpus, data)


@pytest.fixture(scope="session")
def art_index(art: ArtCorpus):
    from mmkg.index import Index

    return Index.open(art.data / "index")


# -- llama.cpp: a tiny GGUF written here, served by llama-cpp-python's OpenAI-compatible server ------------


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is in the llm extra (scripts/test.sh installs it)")
    from tiny_models import write_tiny_gguf

    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")


@pytest.fixture(scope="session")
def llama_server(tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory):
    """llama-cpp-python's server on a free localhost port, serving the tiny GGUF as model "tiny"."""
    import subprocess
    import sys

    port = free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(tiny_gguf), "--model_alias", "tiny",
             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192"],
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_up(proc, lambda: http_ok(f"{url}/models"), "llama-cpp-python's server", log, timeout=90)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


# -- a scripted OpenAI-compatible chat server on localhost (for LLM steps no real model here can do) ----------


class _Scripted(BaseHTTPRequestHandler):
    """/v1/chat/completions answering from a script, recording what it was asked (the real wire format).

    ``replies`` are returned in order; or ``answer(request body) -> text`` decides from what was asked.
    """

    replies: ClassVar[list[str]] = []
    asked: ClassVar[list[dict]] = []
    answer: ClassVar[Callable[[dict], str] | None] = None

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).asked.append(body)
        cls = type(self)
        text = cls.answer(body) if cls.answer is not None else cls.replies[len(cls.asked) - 1]
        out = json.dumps({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def scripted_llm() -> Iterator[type[_Scripted]]:
    handler = type("Handler", (_Scripted,), {"replies": [], "asked": [], "answer": None})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    handler.url = f"http://127.0.0.1:{server.server_address[1]}/v1"  # type: ignore[attr-defined]
    try:
        yield handler
    finally:
        server.shutdown()
        server.server_close()
