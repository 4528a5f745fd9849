"""What the routes of ``mmkg serve`` share: the server's state (``Served``, one per app, a FastAPI dependency),
the JSON error every route raises (``ApiError``), the bounded worker pools, and reading a request.

``create_app`` (``mmkg.api.app``) builds one ``Served`` and puts it on ``app.state.served``; a route takes it
as a parameter ``srv: Annotated[Served, Depends(served)]`` (not part of the OpenAPI schema).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import Request
from pydantic import ValidationError

from mmkg.api.documents import CorpusFolder
from mmkg.api.holder import IndexHolder
from mmkg.api.reindex import Reindexer
from mmkg.query import PictureTooLarge, QueryError, check_picture
from mmkg.retrieval.registry import refused_from_clients

if TYPE_CHECKING:
    from mmkg.api.app import ServeConfig

MB = 1024 * 1024
#: query files a request may upload: default suffix and size limit
UPLOADS = {"image": (".png", 20 * MB), "video": (".mp4", 200 * MB), "audio": (".wav", 100 * MB)}


class ApiError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


class Pool:
    """A thread pool that refuses work past ``max_pending`` waiting requests instead of queueing forever."""

    def __init__(self, name: str, workers: int, max_pending: int):
        self.name = name
        self.executor = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix=f"mmkg-{name}")
        self.max_pending = max_pending
        self.pending = 0
        self._lock = threading.Lock()

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        self.enter()
        try:
            return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)
        finally:
            self.leave()

    def enter(self) -> None:
        with self._lock:
            if self.pending >= self.max_pending:
                raise ApiError(503, f"the server is busy ({self.pending} {self.name} requests in progress); retry "
                                    "shortly", {"Retry-After": "1"})  # fmt: skip
            self.pending += 1

    def leave(self) -> None:
        with self._lock:
            self.pending -= 1


@dataclass
class Served:
    """One server's state: its config, the served version, the corpus folder and its re-indexer, the pools,
    and the generation backends (built on first use, one per process)."""

    cfg: ServeConfig
    holder: IndexHolder
    corpus: CorpusFolder | None
    reindexer: Reindexer | None
    queries: Pool
    answers: Pool
    factories: dict[str, Callable[[], Any]]
    _generators: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def generator(self, name: str | None) -> Any:
        name = name or self.cfg.default_backend
        if name not in self.factories:
            raise ApiError(400, f"unknown backend {name!r}; this server has {sorted(self.factories)}")
        with self._lock:
            if name not in self._generators:
                self._generators[name] = self.factories[name]()
            return self._generators[name]


def served(request: Request) -> Served:
    """The server's state, for a route's ``Depends``."""
    return request.app.state.served


async def parse_request(request: Request, model: type) -> tuple[Any, dict[str, Path], tempfile.TemporaryDirectory]:
    """The validated request model and its uploaded files (saved to a temporary folder)."""
    tmp = tempfile.TemporaryDirectory(prefix="mmkg-upload-")
    files: dict[str, Path] = {}
    ctype = request.headers.get("content-type", "")
    try:
        if ctype.startswith("multipart/form-data"):
            form = await request.form(max_files=3, max_fields=5)
            raw = form.get("request") or "{}"
            payload = json.loads(raw if isinstance(raw, str) else (await raw.read()).decode("utf-8"))
            for kind, (suffix, limit) in UPLOADS.items():
                upload = form.get(kind)
                if upload is None or isinstance(upload, str):
                    continue
                data = await upload.read(limit + 1)
                if len(data) > limit:
                    raise ApiError(413, f"{kind} upload is over the limit of {limit:,} bytes")
                if not data:
                    raise ApiError(400, f"{kind} upload is empty")
                ext = Path(upload.filename or "").suffix.lower() or suffix
                path = Path(tmp.name) / f"{kind}{ext if ext.isascii() and len(ext) <= 6 else suffix}"
                path.write_bytes(data)
                files[kind] = path
        elif ctype.startswith("application/json") or not ctype:
            payload = json.loads(await request.body() or b"{}")
        else:
            raise ApiError(415, f"content type {ctype!r} is not accepted: send application/json or "
                                "multipart/form-data")  # fmt: skip
        if not isinstance(payload, dict):
            raise ApiError(422, "invalid request: the body must be a JSON object")
        try:
            req = model.model_validate(payload)
        except ValidationError as exc:
            raise ApiError(422, "invalid request: " + explain(exc.errors())) from exc
        if req.text is None and not files:
            raise ApiError(422, "invalid request: give text (not empty or only spaces), or upload a file")
        if refused := refused_from_clients(req.strategy, req.params):
            raise ApiError(400, f"parameter(s) {refused} name a model, file or endpoint of the server and cannot "
                                "be set over HTTP (a shipped lexicon's name is fine where paths are refused); "
                                "set them where the server runs, with the CLI or the Python API")  # fmt: skip
        if "image" in files:  # at the door, before a worker is taken (the reader checks again, by path)
            try:
                check_picture(files["image"], what="the image upload")
            except PictureTooLarge as exc:
                raise ApiError(413, str(exc)) from exc
            except QueryError as exc:
                raise ApiError(400, str(exc)) from exc
        return req, files, tmp
    except json.JSONDecodeError as exc:
        tmp.cleanup()
        raise ApiError(400, f"the body is not valid JSON ({exc.msg} at character {exc.pos})") from exc
    except UnicodeDecodeError as exc:
        tmp.cleanup()
        raise ApiError(400, "the request field is not UTF-8 text") from exc
    except BaseException:
        tmp.cleanup()
        raise



def explain(errors: Any) -> str:
    """Pydantic errors as one line: ``k: Input should be a valid integer; text: ...`` (no input echoed)."""
    parts = []
    for e in errors:
        loc = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
        parts.append(f"{loc}: {e.get('msg', 'invalid')}")
    return "; ".join(parts)


def blob(data_root: Path, rel: str) -> Path:
    root = Path(data_root).resolve()
    path = (root / rel).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        raise ApiError(404, "the file of this item is missing from the data root")
    return path


def zeros(index: Any) -> Any:
    import numpy as np

    return np.zeros(index.n_chunks, dtype=np.float32)


def asdict(obj: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(obj)


