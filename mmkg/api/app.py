"""``mmkg serve``: the index over HTTP (FastAPI), and the web page that asks it.

Endpoints: ``POST /query``, ``POST /ask`` (server-sent events with ``"stream": true``), ``POST /subgraph``,
``GET /graph/node`` and ``POST /graph/expand`` (the page's graph explorer, ``mmkg.api.graph_view``),
``GET /index``, ``GET /index/overview`` (the page's Index view, ``mmkg.api.index_view``), ``GET /strategies``,
``GET /chunks/{id}``, ``GET /images/{id}`` (the picture),
``GET /images/{id}/objects`` (its grounded objects, for overlays), ``GET /objects/{id}/crop``,
``POST /documents`` and ``DELETE /documents/{partition}/{path}`` (which start ``mmkg index update`` when the
server was given the command, ``mmkg.api.reindex``; ``GET /index/reindex`` shows it), ``GET /health``; OpenAPI
at ``/docs``.

- **Versions**: one pinned index version answers each request; a newly published one is opened beside
  it and swapped in (``mmkg.api.holder``).
- **Concurrency**: retrieval runs in a bounded pool of query workers, answers (retrieval plus
  generation) in a separate pool, so a slow model never holds up a query; past ``max_pending``
  waiting requests per pool the server answers 503 with ``Retry-After``.
- **Safety**: bound to localhost by default; any other address needs an API key (``Authorization:
  Bearer KEY`` or ``X-API-Key``), which then guards every endpoint but ``/health`` and the page
  itself. CORS is off unless origins are given. Files are served only by id, from the index's own
  table of blobs under the data root. Every error is JSON ``{"error": message}``; an unexpected one
  says only that it happened and its id, and the traceback goes to the server log.

Requests are validated at one boundary (``mmkg.api.models``): JSON, or multipart with a ``request``
field holding that JSON plus ``image``/``video``/``audio`` files (``mmkg.api.server.parse_request``).

Here: the configuration, the app with its middleware (API key, CORS) and error handlers, and the routers of
``mmkg.api.routes`` (reading, index, documents, page), which share the server's state (``mmkg.api.server``).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from mmkg.api.documents import CorpusFolder
from mmkg.api.holder import IndexHolder
from mmkg.api.reindex import Reindexer
from mmkg.api.routes import ROUTERS
from mmkg.api.routes.page import STATIC
from mmkg.api.server import ApiError, Pool, Served, explain

log = logging.getLogger(__name__)
LOOPBACK = {"localhost", "127.0.0.1", "::1"}


@dataclass
class ServeConfig:
    index_root: Path
    data_root: Path | None = None  # where blobs live (default: the index root's parent)
    corpus_root: Path | None = None  # enables /documents
    host: str = "127.0.0.1"
    api_key: str | None = None
    cors_origins: list[str] = field(default_factory=list)
    query_workers: int = 2
    answer_workers: int = 1
    max_pending: int = 32
    max_document_bytes: int = 50 * 1024 * 1024
    generators: dict[str, Callable[[], Any]] = field(default_factory=dict)  # name -> factory (extractive is added)
    default_backend: str = "extractive"
    check_interval: float = 1.0
    encoder: Any = None  # an already loaded encoder (tests); None loads the manifest's
    # the command that re-indexes the corpus after an upload or delete (``mmkg index update --corpus C
    # --data-root D``, built by ``mmkg serve``); None: the server only writes the files (a sensor picks them up)
    reindex_command: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        self.index_root = Path(self.index_root)
        self.data_root = Path(self.data_root) if self.data_root else self.index_root.parent
        if not is_loopback(self.host) and not self.api_key:
            raise ValueError(
                f"binding to {self.host} serves the index beyond this machine: set an API key (--api-key or "
                "MMKG_API_KEY), or bind to 127.0.0.1"
            )


def is_loopback(host: str) -> bool:
    if host in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def create_app(cfg: ServeConfig) -> FastAPI:
    from threadpoolctl import threadpool_limits

    from mmkg.generation import ExtractiveGenerator

    # BLAS on one thread for the whole process: the reader limits it per query, which is not safe across
    # threads (each limit restores what it found); the query workers give the parallelism instead
    threadpool_limits(limits=1, user_api="blas")
    corpus = CorpusFolder(cfg.corpus_root, cfg.max_document_bytes) if cfg.corpus_root else None
    srv = Served(
        cfg=cfg,
        holder=IndexHolder(cfg.index_root, encoder=cfg.encoder, check_interval=cfg.check_interval),
        corpus=corpus,
        reindexer=(Reindexer(cfg.reindex_command, cfg.data_root / "logs" / "serve-reindex.log")
                   if cfg.reindex_command and corpus is not None else None),
        queries=Pool("query", cfg.query_workers, cfg.max_pending),
        answers=Pool("answer", cfg.answer_workers, cfg.max_pending),
        factories={"extractive": ExtractiveGenerator, **_installed_writer(), **cfg.generators},
    )  # fmt: skip
    # /docs is served from vendored Swagger UI files (mmkg.api.routes.page); ReDoc has no vendored copy, so it is off
    app = FastAPI(
        title="mmkg", version=_version(),
        description="Graph retrieval and grounded answers over a multimodal knowledge-graph index.",
        docs_url=None, redoc_url=None,
    )  # fmt: skip
    app.state.served = srv
    app.state.holder = srv.holder
    if cfg.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=cfg.cors_origins, allow_methods=["GET", "POST", "DELETE"],
                           allow_headers=["Authorization", "X-API-Key", "Content-Type"])  # fmt: skip

    @app.middleware("http")
    async def auth(request: Request, call_next: Callable) -> Any:
        if (
            cfg.api_key
            and request.url.path not in ("/health", "/", "/favicon.ico")
            and not request.url.path.startswith("/static/")
        ):
            given = request.headers.get("x-api-key") or ""
            bearer = request.headers.get("authorization", "")
            if bearer.lower().startswith("bearer "):
                given = given or bearer[7:].strip()
            if not hmac.compare_digest(given.encode(), cfg.api_key.encode()):
                return JSONResponse({"error": "missing or wrong API key: send Authorization: Bearer KEY"}, 401,
                                    headers={"WWW-Authenticate": "Bearer"})  # fmt: skip
        return await call_next(request)

    # -- errors: always JSON, never a traceback ------------------------------------------------------

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse({"error": exc.message}, exc.status, headers=exc.headers)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail)}, exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"error": "invalid request: " + explain(exc.errors())}, 422)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        error_id = uuid.uuid4().hex[:12]
        log.exception("request %s %s failed (error id %s)", request.method, request.url.path, error_id)
        return JSONResponse({"error": f"internal error (id {error_id}); the server log has the details"}, 500)

    for router in ROUTERS:
        app.include_router(router)
    if STATIC.is_dir():
        from fastapi.staticfiles import StaticFiles

        app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mmkg")
    except PackageNotFoundError:
        return "0"


def _installed_writer() -> dict[str, Callable[[], Any]]:
    """The installed reading model as a writing backend (``transformers`` without a model: a full-sentence answer
    with citations), when it is installed; built on first use."""
    from mmkg.llm.installed import installed_gguf

    if installed_gguf() is None:
        return {}

    def build() -> Any:
        from mmkg.generation import get_generator

        return get_generator("transformers")

    return {"transformers": build}
