"""The text encoder on ONNX Runtime, in float32 or int8: the same sentence-transformers model, faster on a CPU.

Embedding was 60–70 % of a cold build on two CPU cores. On 2Wiki chunks and sentences the int8
model is 2.5× (chunks) to 3.4× (sentences) faster than torch float32, with cosine 0.993 (mean) /
0.983 (min) to the torch vectors; float32 ONNX gives the torch vectors (cosine 1.0000) 1.1–1.5×
faster (benchmarks/RESULTS.md, "Build speed").

The model is exported once, locally, from the folder the encoder would load anyway (the bundled
all-MiniLM-L6-v2 by default): nothing is downloaded. ``torch.onnx.export`` writes the transformer
(inputs → ``last_hidden_state``); for ``onnx-int8`` onnxruntime's dynamic quantization then stores
the weights of every MatMul and Gemm per output channel in int8 (per-tensor int8 costs too much:
cosine 0.95 mean, 0.91 min). Pooling (mean or CLS, as the model's ``1_Pooling`` config says) and
ℓ2 normalization run here, in numpy. The exported files are cached under ``MMKG_MODEL_CACHE``
(default ``~/.cache/mmkg/models``) in a folder named by the model's weights digest and the versions
of torch, transformers, onnx and onnxruntime (``model.onnx``, ``model_int8.onnx``), so a different
model or library version never reuses them; each is written to a temporary name and renamed, so a
killed export leaves nothing that looks complete. An int8 export's vectors of a fixed probe set (``PROBE``) are
compared with the float32 export's once, and the measure kept beside it (``model_int8.fidelity.json``): dynamic
quantization that keeps MiniLM within cosine 0.987 (least) moves all-mpnet-base-v2 down to 0.787 (mean 0.868),
so the ``auto`` runtime (``mmkg.encoders``) runs such a model in float32. Texts go through in batches of at most
512 padded tokens (``OnnxTextEncoder._batches``).

Why not sentence-transformers' ``backend="onnx"``: it exports and quantizes through optimum, a
dependency stack (optimum, optimum-onnx) this project does not otherwise need and whose pins follow
transformers; the export here is ~100 lines over torch and onnxruntime, which the project ships.
Only models that are a transformer, a pooling layer and optionally a normalization (what
sentence-transformers text models almost always are) are supported; others are refused with a
message that names the ``torch`` runtime, which runs any of them.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import logging
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mmkg import model_files
from mmkg.encoder_base import (
    DEFAULT_MAX_CHARS,
    EncoderInfo,
    EncoderLoadError,
    SurrogateTextImages,
    _check_texts,
    l2_normalize,
    text_model_source,
)

log = logging.getLogger(__name__)

EXPORT_FORMAT = 1  # bump when the export below changes what it writes
#: the least cosine, over ``PROBE``, between a text's int8 vector and its float32 one for ``onnx-int8`` to be used
#: (the bundled MiniLM: 0.987 least, 0.992 mean; all-mpnet-base-v2: 0.787 least, 0.868 mean)
INT8_MIN_COSINE = 0.95
#: texts of the kinds an index embeds (questions, sentences, table rows, headings, names, contacts) on which an
#: int8 export is compared with its float32 one before it is used
PROBE = (
    "Which mission did the first woman to command a Space Shuttle lead?",
    "In July 1999 Eileen Collins became the first woman to command a Space Shuttle mission, STS-93.",
    "Net income | 2017: 3,033 | 2016: 2,371 | 2015: 596",
    "1 Getting Started > 1.3 Charging your watch",
    "Press and hold the Down button to wake up the voice assistant.",
    "Total revenue grew 27% year over year, driven by international streaming memberships.",
    "The committee meets every second Tuesday; minutes are published within ten working days.",
    "Figure 3: Accuracy of PaLM-2L with Step-Back prompting on MMLU Physics and Chemistry.",
    "Grace Hopper",
    "How many people who do not go online are aged 65 or older?",
    "The recipe calls for two cups of flour, a pinch of salt and three eggs, beaten until pale.",
    "Regulation 12: Safe care and treatment. The provider did not assess the risks to the health and safety "
    "of service users receiving care, and did not do all that is reasonably practicable to mitigate such risks.",
    "Gestalt psychology was conceived in the Berlin School of Experimental Psychology, and tries to understand "
    "the laws of our ability to acquire and maintain meaningful perceptions.",
    "INCOME | >$75K: 44% | $50K-$75K: 31% | $30K-$49K: 21% | <=$30K: 15%",
    "Contact: +44 1983 873655, lnahmiash@infavocats.com",
    "The river floods every spring, when snow melts in the mountains upstream.",
)
MAX_BATCH_TOKENS = 512  # padded tokens per forward pass (see OnnxTextEncoder._batches)
OPSET = 17
_MODULES = {
    "sentence_transformers.models.Transformer": "transformer",
    "sentence_transformers.models.Pooling": "pooling",
    "sentence_transformers.models.Normalize": "normalize",
}
_WEIGHTS = ("model.safetensors", "pytorch_model.bin")


@dataclass(frozen=True)
class SentenceModel:
    """What an ONNX run of a sentence-transformers folder needs: where the transformer is and how to pool."""

    folder: Path  # the sentence-transformers folder
    transformer: Path  # the Hugging Face model inside it
    pooling: str  # "mean" | "cls"
    max_length: int

    @classmethod
    def read(cls, folder: Path) -> SentenceModel:
        """Read ``modules.json``, the pooling config and the length limit; refuse what the runtime cannot run."""
        modules_file = folder / "modules.json"
        if not modules_file.exists():
            raise EncoderLoadError(
                f"{folder} has no modules.json, so it is not a local sentence-transformers folder the ONNX runtime "
                "can export; use text runtime 'torch' (MMKG_TEXT_RUNTIME=torch)"
            )
        modules = json.loads(modules_file.read_text(encoding="utf-8"))
        kinds = {}
        for module in modules:
            kind = _MODULES.get(module.get("type", ""))
            if kind is None:
                raise EncoderLoadError(
                    f"{folder} has a {module.get('type')!r} module, which the ONNX text runtime does not run "
                    "(it runs a transformer, pooling and normalization); use text runtime 'torch' "
                    "(MMKG_TEXT_RUNTIME=torch)"
                )
            kinds[kind] = folder / module.get("path", "")
        if "transformer" not in kinds or "pooling" not in kinds:
            raise EncoderLoadError(f"{folder}: modules.json lacks a Transformer or a Pooling module")
        pool_config = json.loads((kinds["pooling"] / "config.json").read_text(encoding="utf-8"))
        if pool_config.get("pooling_mode_mean_tokens"):
            pooling = "mean"
        elif pool_config.get("pooling_mode_cls_token"):
            pooling = "cls"
        else:
            modes = sorted(k for k, v in pool_config.items() if k.startswith("pooling_mode") and v)
            raise EncoderLoadError(
                f"{folder}: pooling {modes} is not run by the ONNX text runtime (mean and CLS are); "
                "use text runtime 'torch' (MMKG_TEXT_RUNTIME=torch)"
            )
        transformer = kinds["transformer"]
        limits = []
        for name in ("sentence_bert_config.json",):
            path = transformer / name
            if path.exists() and (n := json.loads(path.read_text(encoding="utf-8")).get("max_seq_length")):
                limits.append(int(n))
        config = json.loads((transformer / "config.json").read_text(encoding="utf-8"))
        if isinstance(config.get("max_position_embeddings"), int):
            limits.append(config["max_position_embeddings"])
        return cls(folder, transformer, pooling, min(limits) if limits else 512)

    def weights_digest(self) -> str:
        """blake2b of the weights file: a fine-tuned copy under the same path gets its own export."""
        for name in _WEIGHTS:
            path = self.transformer / name
            if path.exists():
                h = hashlib.blake2b(digest_size=10)
                with path.open("rb") as f:
                    while block := f.read(1 << 22):
                        h.update(block)
                return h.hexdigest()
        raise EncoderLoadError(f"{self.transformer} holds no weights file ({' or '.join(_WEIGHTS)})")


def _versions() -> str:
    """The versions that decide what an export writes, read from package metadata (importing torch takes seconds)."""
    from importlib.metadata import PackageNotFoundError, version

    parts = [f"format{EXPORT_FORMAT}", f"opset{OPSET}"]
    for package in ("torch", "transformers", "onnx", "onnxruntime"):
        try:
            parts.append(f"{package}{version(package)}")
        except PackageNotFoundError:
            parts.append(f"{package}-none")
    return "-".join(parts)


def exported_model(model: SentenceModel, runtime: str, cache_root: Path | None = None) -> Path:
    """The ONNX file of ``model`` for ``runtime`` (``onnx`` or ``onnx-int8``), exported on first use."""
    if runtime not in ("onnx", "onnx-int8"):
        raise ValueError(f"no ONNX export for runtime {runtime!r}")
    key = hashlib.blake2b(f"{model.weights_digest()}|{_versions()}".encode(), digest_size=8).hexdigest()
    folder = (cache_root or model_files.cache_root()) / f"{model.transformer.resolve().name}-{key}"
    target = folder / ("model_int8.onnx" if runtime == "onnx-int8" else "model.onnx")
    if target.exists():
        return target
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EncoderLoadError(
            f"cannot write the ONNX export of {model.folder} under {folder} ({exc}); set MMKG_MODEL_CACHE to a "
            "writable folder, or use text runtime 'torch' (MMKG_TEXT_RUNTIME=torch)"
        ) from exc
    fp32 = folder / "model.onnx"
    if not fp32.exists():
        with _temporary(folder, ".onnx") as tmp:
            _export(model, tmp)
            os.chmod(tmp, 0o644)  # mkstemp makes it private; the cache may be shared
            os.replace(tmp, fp32)
    if runtime == "onnx-int8":
        with _temporary(folder, ".onnx") as tmp:
            _quantize(fp32, tmp)
            os.chmod(tmp, 0o644)
            os.replace(tmp, target)
    log.info("exported %s for runtime %s to %s", model.folder, runtime, target)
    return target


@contextlib.contextmanager
def _temporary(folder: Path, suffix: str) -> Iterator[Path]:
    """A temporary file name in ``folder`` (same file system, so the rename is atomic), removed if left."""
    fd, name = tempfile.mkstemp(dir=folder, prefix=".export-", suffix=suffix)
    os.close(fd)
    path = Path(name)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def _input_names(model: object) -> list[str]:
    accepted = inspect.signature(model.forward).parameters  # type: ignore[attr-defined]
    return [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in accepted]


def _export(model: SentenceModel, out: Path) -> None:
    try:
        import onnx  # noqa: F401  (torch's exporter needs it; a clear message beats its ImportError)
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise EncoderLoadError(
            f"exporting {model.folder} to ONNX needs torch, transformers and onnx ({exc}); install the project's "
            "dependencies or use text runtime 'torch' (MMKG_TEXT_RUNTIME=torch)"
        ) from exc
    hf = AutoModel.from_pretrained(str(model.transformer), local_files_only=True).eval()
    names = _input_names(hf)

    class Hidden(torch.nn.Module):
        """The transformer with positional inputs and one output, as the exporter wants it."""

        def __init__(self) -> None:
            super().__init__()
            self.inner = hf

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return self.inner(**dict(zip(names, inputs, strict=True))).last_hidden_state

    dummy = tuple(torch.ones(2, 8, dtype=torch.long) for _ in names)
    axes = {name: {0: "batch", 1: "tokens"} for name in [*names, "last_hidden_state"]}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice (it needs no onnxscript)
        torch.onnx.export(Hidden(), dummy, str(out), input_names=names, output_names=["last_hidden_state"],
                          dynamic_axes=axes, opset_version=OPSET, dynamo=False)  # fmt: skip


class _QuietRoot(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def _quantize(fp32: Path, out: Path) -> None:
    """Quantize ``fp32`` to int8 weights in ``out``.

    ``quantize_dynamic`` writes its shape-inferred copy beside its input (``model-inferred.onnx``) and deletes it
    after: two processes quantizing the same cached export at once (``--processes 2`` on a fresh machine, two
    builds started together) read and delete each other's copy. It reads a link to the export in a folder of
    its own instead.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quiet = _QuietRoot()
    logging.getLogger().addFilter(quiet)  # quantize_dynamic advises pre-processing on the root logger every time
    try:
        with tempfile.TemporaryDirectory(dir=out.parent, prefix=".quantize-") as private:
            source = Path(private) / fp32.name
            try:
                os.link(fp32, source)
            except FileNotFoundError:
                raise  # the export is gone (another process repairing a damaged cache): the caller exports again
            except OSError:  # a file system without hard links
                shutil.copyfile(fp32, source)
            quantize_dynamic(str(source), str(out), weight_type=QuantType.QInt8, per_channel=True)
    finally:
        logging.getLogger().removeFilter(quiet)


@dataclass(frozen=True)
class Fidelity:
    """How close a model's int8 vectors are to its float32 ones over ``PROBE``: the least and the mean cosine."""

    least: float
    mean: float

    @property
    def faithful(self) -> bool:
        return self.least >= INT8_MIN_COSINE


def _fidelity_file(int8: Path) -> Path:
    return int8.with_name(int8.stem + ".fidelity.json")


def _read_fidelity(int8: Path) -> Fidelity | None:
    try:
        data = json.loads(_fidelity_file(int8).read_text())
        return Fidelity(float(data["least"]), float(data["mean"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # not measured yet (an export made before the check), or damaged: measured again


def _write_fidelity(int8: Path, fidelity: Fidelity) -> None:
    # a read-only cache: measured again next time, never wrong
    with contextlib.suppress(OSError), _temporary(int8.parent, ".json") as tmp:
        tmp.write_text(json.dumps({"least": fidelity.least, "mean": fidelity.mean, "probe": len(PROBE)}))
        os.chmod(tmp, 0o644)
        os.replace(tmp, _fidelity_file(int8))


class OnnxTextEncoder(SurrogateTextImages):
    """A sentence-transformers text model on ONNX Runtime (CPU); the same interface as ``TextEncoder``.

    ``runtime``: ``onnx-int8`` (int8 weights, the CPU default) or ``onnx`` (float32, the torch vectors). An int8
    encoder measures its ``fidelity``: the cosines between its vectors of ``PROBE`` and the float32 ones (once per
    export, kept beside it). It is not refused here: an index built with int8 vectors must embed its queries the
    same way; ``mmkg.encoders``' ``auto`` runtime is what chooses float32 for a model int8 damages.
    Texts are tokenized with the model's own fast tokenizer, truncated at its ``max_seq_length``,
    sorted by token count and cut into batches of at most ``max_batch_tokens`` padded tokens
    (``_batches``), so short texts do not pay for long ones and long ones do not fill memory.
    """

    def __init__(
        self,
        model_path: str | None = None,
        runtime: str = "onnx-int8",
        max_chars: int = DEFAULT_MAX_CHARS,
        threads: int = 0,
        cache_root: Path | None = None,
    ):
        if max_chars < 16:
            raise ValueError(f"max_chars must be >= 16, got {max_chars}")
        source, name = text_model_source(model_path)
        if not Path(source).is_dir():
            source = _cached_snapshot(source)
        self.max_chars = int(max_chars)
        self.runtime = runtime
        self.max_batch_tokens = MAX_BATCH_TOKENS
        self._cache_root = cache_root
        self.layout = SentenceModel.read(Path(source))
        self.tokenizer = _tokenizer(self.layout)
        path = exported_model(self.layout, runtime, cache_root)
        try:
            self.session = _session(path, threads)
        except Exception as exc:  # a damaged cached export: export again, once
            log.warning("cached ONNX model %s does not load (%s); exporting it again", path, exc)
            # the damaged file and the export it was made from, not their folder: another process may be
            # exporting or quantizing there now (its temporaries and its private link must survive)
            for damaged in {path, path.parent / "model.onnx"}:
                damaged.unlink(missing_ok=True)
            path = exported_model(self.layout, runtime, cache_root)
            self.session = _session(path, threads)
        self.model_file = path
        self._inputs = [i.name for i in self.session.get_inputs()]
        dim = int(self._run_batch(self.tokenizer.encode_batch(["dimension probe"])).shape[1])
        self.info = EncoderInfo(backend="text", model=name, dim=dim, runtime=runtime)
        #: for int8: how close its vectors are to float32 ones (``encoders``' ``auto`` falls back to float32 when
        #: not ``faithful``); measured once per export, kept beside it
        self.fidelity: Fidelity | None = None
        if runtime == "onnx-int8":
            self.fidelity = _read_fidelity(path) or self._measure_fidelity(path)

    def _measure_fidelity(self, int8: Path) -> Fidelity:
        """Cosines between this int8 model's vectors of ``PROBE`` and its float32 twin's, kept beside the export."""
        # a twin of its own, not ``float32()``'s: a reader keeps no second model in memory for a check made once
        twin = OnnxTextEncoder(str(self.layout.folder), runtime="onnx", max_chars=self.max_chars,
                               cache_root=self._cache_root)  # fmt: skip
        cos = np.sum(self.encode_text(PROBE) * twin.encode_text(PROBE), axis=1)
        fidelity = Fidelity(round(float(cos.min()), 4), round(float(cos.mean()), 4))
        _write_fidelity(int8, fidelity)
        log.info("int8 export %s: cosine to float32 least %.4f, mean %.4f", int8, fidelity.least, fidelity.mean)
        return fidelity

    def float32(self) -> OnnxTextEncoder:
        """The float32 twin of this encoder (the torch vectors, from the same export), loaded on first use.

        For decisions thresholded on cosines calibrated on float vectors (CMEL's τ): int8 activations
        are quantized per batch, so a text's vector moves with its batch (cosine 0.992 mean, 0.975 min
        between a text alone and in a batch of 64) and borderline decisions would flip.
        """
        if self.runtime == "onnx":
            return self
        twin = getattr(self, "_float32", None)
        if twin is None:
            twin = self._float32 = OnnxTextEncoder(
                str(self.layout.folder), runtime="onnx", max_chars=self.max_chars, cache_root=self._cache_root
            )
        return twin

    def _hidden(self, encodings: list) -> tuple[np.ndarray, np.ndarray]:
        """Token vectors ``(batch, tokens, dim)`` and the attention mask of one batch, padded to its longest."""
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return self.session.run(None, {name: feeds[name] for name in self._inputs})[0], mask

    def _pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if self.layout.pooling == "cls":
            return hidden[:, 0, :]
        weights = mask[..., None].astype(hidden.dtype)
        return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)

    def _run_batch(self, encodings: list) -> np.ndarray:
        """Pooled (not yet normalized) vectors of one batch of tokenized texts."""
        return self._pool(*self._hidden(encodings))

    def _batches(self, items: list[str], batch_size: int) -> Iterator[tuple[np.ndarray, list]]:
        """(rows, encodings) batches of similar token length, longest first, within a token budget.

        A batch holds at most ``batch_size`` texts and at most ``max_batch_tokens`` padded tokens.
        Measured on one 2Wiki partition against batches of 64: chunks (~256 tokens, so 2 per batch)
        2.03 s instead of 3.70 s, sentences 1.64 s instead of 2.38 s, entity names (64 per batch
        either way) unchanged, and 51 MiB of activations instead of 1,037 MiB (onnxruntime's arena
        keeps its largest batch). Budgets of 256 to 2,048 tokens were within 20 % of each other.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        encodings = self.tokenizer.encode_batch(items)
        # longest first: a batch too large for memory fails at once; sorting by tokens, not characters,
        # pads 2Wiki sentences to 37k tokens instead of 50k (31k real)
        order = np.argsort([-len(e.ids) for e in encodings], kind="stable")
        start = 0
        while start < len(order):
            longest = max(1, len(encodings[order[start]].ids))
            size = max(1, min(batch_size, self.max_batch_tokens // longest))
            rows = order[start : start + size]
            yield rows, [encodings[i] for i in rows]
            start += size

    def encode_text(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed texts in batches of similar token length; rows are unit length and follow input order."""
        items = _check_texts(texts)
        out = np.zeros((len(items), self.info.dim), np.float32)
        for rows, encodings in self._batches(items, batch_size):
            out[rows] = self._run_batch(encodings)
        return l2_normalize(out)

    def encode_with_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]], batch_size: int = 64
    ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """Each text's vector and, from the same forward pass, a vector per character span of it.

        A span's vector is the mean of the token vectors whose characters lie inside it, read off the
        text's own pass ("late chunking"): a chunk's sentences cost no second pass, and each sees its
        chunk as context. A span whose tokens were truncated away (past ``max_seq_length``) or that
        holds no token gets None, for the caller to embed on its own. Rows are unit length.
        """
        items = _check_texts(texts)
        if len(spans) != len(items):
            raise ValueError(f"{len(items)} texts but {len(spans)} span lists")
        if self.layout.pooling != "mean":
            raise ValueError("span vectors need a mean-pooled model; this one pools the CLS token")
        text_vectors = np.zeros((len(items), self.info.dim), np.float32)
        span_vectors: list[np.ndarray | None] = [None] * sum(len(s) for s in spans)
        first = np.cumsum([0, *(len(s) for s in spans)])
        for rows, encodings in self._batches(items, batch_size):
            hidden, mask = self._hidden(encodings)
            text_vectors[rows] = self._pool(hidden, mask)
            for b, (row, enc) in enumerate(zip(rows, encodings, strict=True)):
                offsets = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)
                real = (np.asarray(enc.special_tokens_mask) == 0) & (offsets[:, 1] > offsets[:, 0])
                for j, (lo, hi) in enumerate(spans[row]):
                    inside = real & (offsets[:, 0] >= lo) & (offsets[:, 1] <= hi)
                    if inside.any():
                        span_vectors[first[row] + j] = l2_normalize(hidden[b, : len(inside)][inside].mean(axis=0))
        return l2_normalize(text_vectors), span_vectors


def _cached_snapshot(model_id: str) -> str:
    """The local folder of a hub id in the Hugging Face cache; never downloads while offline."""
    from huggingface_hub import snapshot_download

    from mmkg.encoder_base import _OFFLINE_HINT, offline_mode

    offline = offline_mode()
    try:
        return snapshot_download(model_id, local_files_only=offline)
    except Exception as exc:  # huggingface_hub raises several kinds for "not cached" / "no network"
        where = _OFFLINE_HINT if offline else "it could not be downloaded"
        raise EncoderLoadError(
            f"cannot load sentence-transformers model {model_id!r}: no local folder of that name and it is not in "
            f"the Hugging Face cache; {where}. Copy the model to a local folder and pass its path."
        ) from exc


def _tokenizer(model: SentenceModel):  # -> tokenizers.Tokenizer
    from tokenizers import Tokenizer

    path = model.transformer / "tokenizer.json"
    if path.exists():
        tokenizer = Tokenizer.from_file(str(path))
    else:  # an older folder with vocab files only: transformers builds the fast tokenizer
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(model.transformer), local_files_only=True).backend_tokenizer
    tokenizer.enable_truncation(model.max_length)
    tokenizer.no_padding()
    return tokenizer


def _session(path: Path, threads: int):  # -> onnxruntime.InferenceSession
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = max(0, int(threads))  # 0: one per physical core
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
