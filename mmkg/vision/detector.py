"""Ultralytics grounding backend: detector boxes and masks for the entities around an image.

MG2-RAG's entity-driven visual grounding: the entities of an image's chunk are the prompts, and a
detected object is kept when its confidence σ > τ. Three kinds of model are served:

* open-vocabulary (YOLOE, YOLO-World, or anything exposing ``set_classes``): the entity names
  are the text prompts. Images that share one prompt set are batched together (as the paper
  does), so ``set_classes`` runs once per prompt set and the text embedding of each name once.
* SAM 3 (``SAM3SemanticPredictor``; a checkpoint whose file name contains ``sam3``): text-prompted
  segmentation with the entity names, one image at a time (ultralytics does not batch SAM 3).
* closed-vocabulary (YOLO / YOLO-seg / RT-DETR, prompt-free YOLOE): fixed ``model.names``. A class
  is attributed to an entity of the task by the rules of :class:`ClassMatcher`; images with no
  matching class are not run through the model at all.

Weights never download silently: a checkpoint that is not on disk raises ``ModelWeightsMissing``
before ultralytics is asked for it, and so does a missing text encoder of an open-vocabulary model.
Boxes and mask outlines are in pixels of the stored image as decoded (no EXIF rotation), the frame
the crops and overlays use.

Tested offline with randomly initialised models built from ultralytics' yaml (YOLOv8-seg, YOLOE,
YOLO-World, the latter two with a stand-in ``text_embedder``). Untested here: the real text
encoders (MobileCLIP / CLIP weights), trained-weight quality, and the SAM 3 path (gated weights),
which follows the installed ultralytics source (``SAM3SemanticPredictor(overrides)(source, text=)``).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from mmkg.entities import canonical_key
from mmkg.vision.base import Detection, EntityPrompt, GroundingOutcome, GroundingTask

__all__ = [
    "DEFAULT_SYNONYMS",
    "LABEL_CLASSES",
    "NAME_MATCH_EXCLUDED_LABELS",
    "ClassMatcher",
    "ModelWeightsMissing",
    "UltralyticsGrounder",
    "import_ultralytics",
    "load_bgr",
    "normalize_term",
    "resolve_device",
    "resolve_weights",
]

BACKEND = "ultralytics"
SAM3_IMGSZ = 1008  # SAM 3's native input (72 patches of 14 px); its feature sizes assume it
REMOTE_PREFIXES = ("http://", "https://", "ul://", "gs://", "s3://", "hub.ultralytics.com", "rtsp://", "grpc://")


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# Detector class -> further words that name it in entity names (COCO classes; extend via `synonyms`).
# Words are compared after normalize_term, so listing singulars is enough ("women" -> "woman").
DEFAULT_SYNONYMS: dict[str, tuple[str, ...]] = {
    "person": _words(
        "people man woman boy girl child human astronaut cosmonaut pilot scientist engineer programmer "
        "soldier sailor officer player"
    ),
    "bicycle": ("bike",),
    "car": ("automobile",),
    "motorcycle": ("motorbike",),
    "airplane": ("aeroplane", "plane", "aircraft", "airliner", "jet"),
    "boat": ("ship", "vessel"),
    "truck": ("lorry",),
    "couch": ("sofa",),
    "tv": ("television", "tv set"),
    "laptop": ("notebook computer",),
    "cell phone": ("phone", "mobile phone", "smartphone", "cellphone"),
    "dining table": ("table",),
    "potted plant": ("houseplant", "plant"),
    "sports ball": ("ball",),
    "donut": ("doughnut",),
    "hair drier": ("hair dryer",),
    "cup": ("mug",),
}
# NER label -> detector classes an entity with that label may be seen as. A PERSON entity ("Grace
# Hopper") is what a "person" box shows in our corpora; other labels name things no COCO class depicts.
LABEL_CLASSES: dict[str, tuple[str, ...]] = {"PERSON": ("person",)}
# Entities with these labels are never matched to a class by name: "Apple" (ORG) is no apple,
# "Turkey" (GPE) no bird, and numbers or dates are no objects.
NAME_MATCH_EXCLUDED_LABELS = frozenset(
    _words("PERSON NORP ORG GPE LOC FAC EVENT LAW LANGUAGE DATE TIME MONEY PERCENT QUANTITY ORDINAL CARDINAL")
)

_IRREGULAR_PLURALS = dict(
    pair.split(":")
    for pair in _words(
        "people:person men:man women:woman children:child mice:mouse knives:knife geese:goose teeth:tooth "
        "feet:foot wolves:wolf leaves:leaf buses:bus"
    )
)
_INVARIANT = frozenset(_words("sheep scissors skis species series news"))
_TEXT_ENCODER_FILES = {"mobileclip": "mobileclip_blt.ts", "mobileclip2": "mobileclip2_b.ts"}

TextEmbedder = Callable[[list[str]], Any]  # names -> (1, n, D) or (n, D) prompt embeddings (torch.Tensor)


class ModelWeightsMissing(FileNotFoundError):
    """A checkpoint or text encoder that must be put on disk by hand (nothing is downloaded)."""


def resolve_device(device: str) -> str:
    """``auto`` -> first CUDA device when torch sees one, else CPU; anything else passes through."""
    if device != "auto":
        return device
    import torch

    return "cuda:0" if torch.cuda.is_available() else "cpu"


def _singular(word: str) -> str:
    if word in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[word]
    if word in _INVARIANT or len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def normalize_term(text: str) -> str:
    """Canonical key with underscores as spaces and the last word singular ("Wine Glasses" -> "wine glass").

    Only the head (last) word of an English noun phrase carries the plural, so only it is stripped.
    """
    words = canonical_key(text.replace("_", " ")).split()
    if not words:
        return ""
    words[-1] = _singular(words[-1])
    return " ".join(words)


class ClassMatcher:
    """Which detector classes stand for which of a task's entities (closed-vocabulary models).

    A class matches an entity when
      1. the entity's NER label lists the class in ``LABEL_CLASSES`` (PERSON -> "person"), or
      2. the entity's label is not a proper-name/number label (``NAME_MATCH_EXCLUDED_LABELS``) and its
         name or key, normalized by :func:`normalize_term`, equals the normalized class name or one
         of the class's synonyms (``DEFAULT_SYNONYMS`` extended by the caller's).
    Matching is exact on whole normalized phrases: no head-noun or fuzzy matching, since a wrong
    grounding adds a false edge to the graph while a missed one only costs recall.
    Each class goes to the first matching entity in task order. Tasks list entities most mentioned
    first, so several PERSON entities compete for one "person" box and the most mentioned one wins.
    """

    def __init__(
        self,
        names: Mapping[int, str],
        synonyms: Mapping[str, Sequence[str]] | None = None,
        label_classes: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        extra = {normalize_term(c): list(words) for c, words in (synonyms or {}).items()}
        base = {normalize_term(c): list(words) for c, words in DEFAULT_SYNONYMS.items()}
        self._terms: dict[str, set[int]] = {}
        self._by_name: dict[str, set[int]] = {}
        for cid, cname in names.items():
            norm = normalize_term(str(cname))
            if not norm:
                continue
            self._by_name.setdefault(norm, set()).add(int(cid))
            for term in (norm, *base.get(norm, ()), *extra.get(norm, ())):
                t = normalize_term(term)
                if t:
                    self._terms.setdefault(t, set()).add(int(cid))
        self._labels = {
            label.upper(): sorted({c for cls in classes for c in self._by_name.get(normalize_term(cls), ())})
            for label, classes in (label_classes if label_classes is not None else LABEL_CLASSES).items()
        }

    def classes_for(self, entity: EntityPrompt) -> list[int]:
        """Class ids that may show this entity."""
        found = list(self._labels.get(entity.label.upper(), ()))
        if entity.label.upper() not in NAME_MATCH_EXCLUDED_LABELS:
            for text in (entity.name, entity.key):
                found.extend(sorted(self._terms.get(normalize_term(text), ())))
        return list(dict.fromkeys(found))

    def match(self, entities: Sequence[EntityPrompt]) -> dict[int, EntityPrompt]:
        """Class id -> the entity its boxes are attributed to (first matching entity wins)."""
        out: dict[int, EntityPrompt] = {}
        for entity in entities:
            for cid in self.classes_for(entity):
                out.setdefault(cid, entity)
        return out


def _to_rgb(im: Image.Image) -> Image.Image:
    """Any PIL mode as 8-bit RGB: alpha over white, 16/32-bit and float grey rescaled, CMYK/P/1/L converted."""
    if im.mode in {"I", "I;16", "I;16B", "I;16L", "I;16N", "F"}:
        a = np.asarray(im, dtype=np.float64)
        lo, hi = float(a.min(initial=0.0)), float(a.max(initial=0.0))
        if lo < 0 or hi > 65535:
            a = (a - lo) * (255.0 / max(hi - lo, 1e-12))
        elif hi > 255:
            a = a / 257.0
        return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8), "L").convert("RGB")
    if im.mode in {"RGBA", "LA", "PA", "RGBa", "La"} or "transparency" in im.info:
        rgba = im.convert("RGBA")
        canvas = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        canvas.alpha_composite(rgba)
        return canvas.convert("RGB")
    return im if im.mode == "RGB" else im.convert("RGB")


def load_bgr(path: Path) -> np.ndarray:
    """The stored image as a contiguous HxWx3 uint8 BGR array (ultralytics reads numpy input as BGR).

    Decoding happens here, so a truncated or corrupt file fails for this image alone, not its batch.
    """
    with Image.open(path) as im:
        im.load()
        rgb = _to_rgb(im)
    arr = np.asarray(rgb, dtype=np.uint8)
    if arr.ndim != 3 or arr.shape[2] != 3 or not all(arr.shape):
        raise ValueError(f"unsupported image shape {arr.shape}")
    return np.ascontiguousarray(arr[:, :, ::-1])


def import_ultralytics() -> Any:
    """Import ultralytics (slow, so only when needed) and undo its global ``PIL.Image.open`` patch.

    On import, ultralytics swaps ``Image.open`` for a wrapper that, whenever Pillow cannot identify a
    file, pip-installs ``pi-heif`` (network) and, offline, raises ``ModuleNotFoundError`` instead of
    ``UnidentifiedImageError``. That would change image handling everywhere in the process (ingest
    rejects bad files by that error), so Pillow's own function is put back; HEIC support is lost.
    """
    import ultralytics
    import ultralytics.utils
    from ultralytics.utils import patches

    original = getattr(patches, "_image_open", None)
    if original is not None and Image.open is getattr(patches, "image_open", None):
        Image.open = original
    return ultralytics


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def resolve_weights(model: str) -> str:
    """Local path for a checkpoint, or the yaml name as given; raises ``ModelWeightsMissing`` otherwise.

    Ultralytics would fetch a missing ``*.pt`` from GitHub: we refuse, so runs repeat and never
    reach the network. Its own fallback folder (``SETTINGS['weights_dir']``) is honoured.
    """
    spec = str(model).strip()
    if spec.lower().startswith(REMOTE_PREFIXES):
        raise ModelWeightsMissing(f"refusing to download model {spec!r}: put the file on disk and pass its path")
    path = Path(spec).expanduser()
    if path.suffix.lower() in {".yaml", ".yml"}:
        return spec  # architecture only: built with random weights (local file or ultralytics' packaged cfg)
    if path.exists():
        return str(path)
    weights_dir = Path(import_ultralytics().utils.SETTINGS["weights_dir"])
    name = path.name if path.suffix else f"{path.name}.pt"  # ultralytics reads a bare stem as "<stem>.pt"
    for candidate in (path.with_name(name), weights_dir / name):
        if candidate.exists():
            return str(candidate)
    raise ModelWeightsMissing(
        f"model weights {spec!r} not found: put the file at {path.resolve()} (or {weights_dir / name}) "
        "and pass its path. Weights are never downloaded here; set YOLO_OFFLINE=1 to keep ultralytics offline too."
    )


@dataclass
class _Job:
    """One task and the plan to ground it: class id (closed) or prompt index (open) -> entity."""

    task: GroundingTask
    targets: dict[int, EntityPrompt]
    prompts: tuple[str, ...] = ()
    outcome: GroundingOutcome | None = None
    image: np.ndarray | None = field(default=None, repr=False)


class UltralyticsGrounder:
    """Grounds each image's entities with an ultralytics detector/segmenter (see module docstring).

    ``model`` is a local checkpoint (``*.pt`` or an exported model), a model yaml (random weights,
    for tests and smoke runs), or a bare name resolved like a checkpoint. ``conf`` is the detector's
    own threshold; ``ground(..., tau)`` then keeps σ > τ, so the effective bar is max(conf, τ).
    ``text_embedder`` replaces an open-vocabulary model's text encoder: names -> prompt embeddings
    as the model's ``get_text_pe`` returns them (precomputed embeddings, offline encoders, tests).
    ``label_prompts`` adds, for open vocabularies, the ``LABEL_CLASSES`` words of an entity's label
    as extra prompts for it ("person" for a PERSON entity): a text encoder rarely knows what Grace
    Hopper looks like, but finds a person, attributed to the most mentioned PERSON entity.
    """

    name = "ultralytics"

    def __init__(
        self,
        model: str,
        device: str = "auto",
        batch_size: int = 8,
        imgsz: int = 640,
        conf: float = 0.25,
        synonyms: dict[str, list[str]] | None = None,
        text_embedder: TextEmbedder | None = None,
        label_prompts: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.model_spec = str(model)
        self.weights = resolve_weights(self.model_spec)  # fail at configuration time, not mid-run
        self.device = resolve_device(device)
        self.batch_size = batch_size
        self.imgsz = imgsz
        self.conf = conf
        self.synonyms = synonyms or {}
        self.text_embedder = text_embedder
        self.label_prompts = label_prompts
        self._model: Any = None
        self._kind: str | None = None  # "closed" | "yoloe" | "world" | "open" | "sam3"
        self._matcher: ClassMatcher | None = None
        self._pe_cache: dict[str, Any] = {}
        self._prompts_set: tuple[str, ...] | None = None

    # -- loading -----------------------------------------------------------------------------

    @property
    def model(self) -> Any:
        """The loaded ultralytics model (or SAM 3 predictor), loaded on first use."""
        self.load()
        return self._model

    @property
    def kind(self) -> str:
        """``closed``, ``yoloe``, ``world``, ``open`` (other ``set_classes`` models) or ``sam3``."""
        self.load()
        assert self._kind is not None
        return self._kind

    @property
    def open_vocabulary(self) -> bool:
        return self.kind != "closed"

    def load(self) -> None:
        """Resolve and load the model once; raises ``ModelWeightsMissing`` before any download could start."""
        if self._model is not None:
            return
        weights = self.weights
        if "sam3" in Path(weights).stem.lower():
            self._model, self._kind = self._load_sam3(weights), "sam3"
            return
        ul = import_ultralytics()
        model = ul.YOLO(weights)
        head = getattr(getattr(model, "model", None), "model", None)
        prompt_free = head is not None and hasattr(head[-1], "lrpc")  # YOLOE "-pf": fused, fixed vocabulary
        if isinstance(model, ul.YOLOE) and not prompt_free:
            kind = "yoloe"
        elif isinstance(model, ul.YOLOWorld):
            kind = "world"
        elif not prompt_free and callable(getattr(model, "set_classes", None)):
            kind = "open"
        else:
            kind = "closed"
        if model.task not in {"detect", "segment", "pose"}:
            raise ValueError(f"{self.model_spec}: task {model.task!r} gives no boxes; use a detect or segment model")
        self._model, self._kind = model, kind
        if kind == "closed":
            self._matcher = ClassMatcher(model.names, self.synonyms)

    def _load_sam3(self, weights: str) -> Any:
        """SAM 3 semantic predictor; needs the gated ``sam3.pt`` on disk and the ``clip`` package installed.

        UNTESTED (no weights offline): written against ultralytics 8.4's SAM3SemanticPredictor, which
        builds the model on first call and takes ``text=[...]`` per image; results name classes by text.
        """
        _require_clip("SAM 3")
        import_ultralytics()
        from ultralytics.models.sam import SAM3SemanticPredictor

        overrides = {
            "conf": self.conf,
            "task": "segment",
            "mode": "predict",
            "model": weights,
            "imgsz": SAM3_IMGSZ,
            "device": self.device,
            "save": False,
            "verbose": False,
        }
        return SAM3SemanticPredictor(overrides=overrides)

    # -- grounding ---------------------------------------------------------------------------

    def ground(self, tasks: Sequence[GroundingTask], tau: float) -> Iterator[GroundingOutcome]:
        """One outcome per task, in task order; a bad image yields an outcome with ``error`` set.

        Tasks are taken in windows; within one, images sharing a plan (all of them for closed
        vocabularies, one prompt set for open ones) are run ``batch_size`` at a time, then the
        window's outcomes are yielded in order. Windows bound memory and latency.
        """
        self.load()
        window = max(64, 8 * self.batch_size)
        for start in range(0, len(tasks), window):
            jobs = [self._plan(t) for t in tasks[start : start + window]]
            groups: dict[tuple[str, ...], list[_Job]] = {}
            for job in jobs:
                if job.outcome is None:
                    groups.setdefault(job.prompts, []).append(job)
            for prompts, members in groups.items():
                size = 1 if self._kind == "sam3" else self.batch_size
                for b in range(0, len(members), size):
                    self._run(prompts, members[b : b + size], tau)
            for job in jobs:
                assert job.outcome is not None
                yield job.outcome

    def _plan(self, task: GroundingTask) -> _Job:
        """What to look for in this image; an empty plan is answered at once, without the model."""
        if self._kind == "closed":
            assert self._matcher is not None
            job = _Job(task, self._matcher.match(task.entities))
        else:
            by_prompt: dict[str, EntityPrompt] = {}
            seen: set[str] = set()
            candidates = [(" ".join(e.name.split()) or " ".join(e.key.split()), e) for e in task.entities]
            if self.label_prompts:  # after all names, so a literal "person" entity keeps its own prompt
                candidates += [(c, e) for e in task.entities for c in LABEL_CLASSES.get(e.label.upper(), ())]
            for prompt, entity in candidates:
                key = canonical_key(prompt) or prompt
                if prompt and key not in seen:
                    seen.add(key)
                    by_prompt[prompt] = entity
            prompts = tuple(sorted(by_prompt))  # sorted: the same set groups whatever the entity order
            job = _Job(task, {i: by_prompt[p] for i, p in enumerate(prompts)}, prompts)
        if not job.targets:
            job.outcome = self._empty_outcome(task)
        return job

    @staticmethod
    def _empty_outcome(task: GroundingTask) -> GroundingOutcome:
        """Nothing to look for; the image is still decoded so unreadable files are reported alike."""
        try:
            load_bgr(task.path)
        except Exception as exc:
            return GroundingOutcome(task.image_id, [], error=_error(exc))
        return GroundingOutcome(task.image_id, [])

    def _run(self, prompts: tuple[str, ...], jobs: list[_Job], tau: float) -> None:
        """Decode, predict (batched, per image on failure) and fill each job's outcome."""
        ready: list[_Job] = []
        for job in jobs:
            try:
                job.image = load_bgr(job.task.path)
                ready.append(job)
            except Exception as exc:
                job.outcome = GroundingOutcome(job.task.image_id, [], error=_error(exc))
        if not ready:
            return
        if self._kind != "closed":
            self._set_prompts(prompts)
        pairs: list[tuple[_Job, Any]] = []
        try:
            pairs = list(zip(ready, self._predict(ready), strict=True))
        except Exception as exc:
            if len(ready) == 1:
                ready[0].outcome = GroundingOutcome(
                    ready[0].task.image_id, [], error=f"inference failed: {_error(exc)}"
                )
            else:  # isolate the image that broke the batch
                for job in ready:
                    try:
                        pairs.append((job, self._predict([job])[0]))
                    except Exception as one:
                        job.outcome = GroundingOutcome(job.task.image_id, [], error=f"inference failed: {_error(one)}")
        for job, result in pairs:
            job.outcome = GroundingOutcome(job.task.image_id, self._detections(job, result, tau))
        for job in jobs:
            job.image = None

    def _predict(self, jobs: list[_Job]) -> list[Any]:
        """One ultralytics call over the batch's images."""
        images = [job.image for job in jobs]
        if self._kind == "sam3":
            return [r for job in jobs for r in self._model(source=job.image, text=list(job.prompts))]
        kwargs: dict[str, Any] = {"imgsz": self.imgsz, "conf": self.conf, "device": self.device, "verbose": False}
        if self._kind == "closed":  # only the classes some image of the batch asks for: fewer boxes, masks, NMS
            kwargs["classes"] = sorted({cid for job in jobs for cid in job.targets})
        return list(self._model.predict(images, **kwargs))

    def _detections(self, job: _Job, result: Any, tau: float) -> list[Detection]:
        """Boxes of the task's targets with σ > τ, as Detections in stored-image pixels."""
        boxes = getattr(result, "boxes", None)
        if boxes is None or len(boxes) == 0:
            return []
        scores = boxes.conf.detach().cpu().numpy().astype(float)
        classes = boxes.cls.detach().cpu().numpy().astype(int)
        keep = [j for j in range(len(scores)) if scores[j] > tau and int(classes[j]) in job.targets]
        if not keep:
            return []
        if len(keep) < len(scores):
            result = result[keep]  # outlines are traced for kept masks only
        h, w = result.orig_shape[:2]
        xyxy = result.boxes.xyxy.detach().cpu().numpy().astype(float)
        outlines = result.masks.xy if result.masks is not None else [np.zeros((0, 2))] * len(keep)
        out = []
        for k, j in enumerate(keep):
            cid = int(classes[j])
            entity = job.targets[cid]
            x0, y0, x1, y1 = (float(v) for v in xyxy[k])
            box = (
                round(min(max(x0, 0.0), w), 2),
                round(min(max(y0, 0.0), h), 2),
                round(min(max(x1, 0.0), w), 2),
                round(min(max(y1, 0.0), h), 2),
            )
            outline = np.asarray(outlines[k], dtype=float)
            polygons = (tuple(round(v, 2) for v in outline.reshape(-1).tolist()),) if len(outline) >= 3 else ()
            out.append(
                Detection(
                    image_id=job.task.image_id,
                    entity_key=entity.key,
                    entity_name=entity.name,
                    backend=BACKEND,
                    label=_class_name(result.names, cid),
                    box=box,
                    score=float(scores[j]),
                    polygons=polygons,
                )
            )
        return out

    # -- open vocabulary -----------------------------------------------------------------------

    def _set_prompts(self, prompts: tuple[str, ...]) -> None:
        """Point the model at this prompt set (once per group; SAM 3 takes the text per call)."""
        if self._kind == "sam3" or prompts == self._prompts_set:
            return
        names = list(prompts)
        if self._kind == "open":  # unknown set_classes model: its own API, its own text encoder
            self._model.set_classes(names)
        else:
            pe = self._embeddings(names)
            if self._kind == "yoloe":
                self._model.set_classes(names, pe)
            else:  # YOLOWorld.set_classes would rebuild CLIP per call; same state, cached embeddings
                inner = self._model.model
                inner.txt_feats = pe
                inner.model[-1].nc = len(names)
                inner.names = names
                self._model.predictor = None
        self._prompts_set = prompts

    def _embeddings(self, names: list[str]) -> Any:
        """(1, n, D) prompt embeddings, each name encoded once per grounder."""
        import torch

        missing = [n for n in names if n not in self._pe_cache]
        if missing:
            if self.text_embedder is not None:
                pe = self.text_embedder(missing)
            else:
                self._check_text_encoder()
                pe = self._model.model.get_text_pe(missing, cache_clip_model=True)
            pe = torch.as_tensor(pe)
            pe = pe[None] if pe.ndim == 2 else pe
            if pe.shape[:2] != (1, len(missing)):
                raise ValueError(f"text embeddings of shape {tuple(pe.shape)} for {len(missing)} names")
            for n, vec in zip(missing, pe[0], strict=True):
                self._pe_cache[n] = vec.detach()
        device = next(self._model.model.parameters()).device
        return torch.stack([self._pe_cache[n] for n in names])[None].to(device)

    def _check_text_encoder(self) -> None:
        """Fail clearly, instead of pip-installing or downloading, when the text encoder is not local."""
        _require_clip(f"{self._kind} text prompts", hint=", or pass text_embedder=")
        weights_dir = Path(import_ultralytics().utils.SETTINGS["weights_dir"])
        variant = "clip:ViT-B/32" if self._kind == "world" else getattr(self._model.model, "text_model", "")
        base, _, size = str(variant or "mobileclip:blt").partition(":")
        if base == "clip":
            files = [weights_dir / "clip" / f"{size.replace('/', '-')}.pt"]
        else:
            name = _TEXT_ENCODER_FILES.get(base, f"{base}.ts")
            files = [Path(name), weights_dir / name]
        if not any(f.exists() for f in files):
            raise ModelWeightsMissing(
                f"text encoder {variant!r} of {self.model_spec} not found: put it at {files[-1]} "
                "(nothing is downloaded here; set YOLO_OFFLINE=1), or pass text_embedder=."
            )


def _class_name(names: Any, cid: int) -> str:
    """Class name from a result's ``names`` (a dict for YOLO, a list for SAM 3)."""
    if isinstance(names, Mapping):
        return str(names.get(cid, cid))
    if isinstance(names, Sequence) and 0 <= cid < len(names):
        return str(names[cid])
    return str(cid)


def _require_clip(what: str, hint: str = "") -> None:
    """Ultralytics pip-installs OpenAI CLIP on import when it is missing; we would rather say so."""
    if importlib.util.find_spec("clip") is None:
        raise ModelWeightsMissing(
            f"{what} need the 'clip' package (pip install git+https://github.com/ultralytics/CLIP.git); "
            f"it is not installed and is never installed automatically here{hint}."
        )
