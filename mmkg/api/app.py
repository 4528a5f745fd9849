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
field holding that JSON plus ``image``/``video``/``audio`` files.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException

from mmkg.api.documents import CorpusFolder, DocumentError
from mmkg.api.holder import IndexHolder
from mmkg.api.models import AskRequest, ExpandRequest, QueryRequest, SubgraphRequest
from mmkg.api.reindex import Reindexer
from mmkg.query import PictureTooLarge, QueryError, check_picture
from mmkg.retrieval import engine as retrieval
from mmkg.retrieval import evidence as ev
from mmkg.retrieval.registry import refused_from_clients

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"
VENDOR = STATIC / "vendor"  # JavaScript and CSS copied from web/node_modules by scripts/setup.sh
LOOPBACK = {"localhost", "127.0.0.1", "::1"}
MB = 1024 * 1024
#: query files a request may upload: default suffix and size limit
UPLOADS = {"image": (".png", 20 * MB), "video": (".mp4", 200 * MB), "audio": (".wav", 100 * MB)}


class ApiError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


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


class _Pool:
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


def create_app(cfg: ServeConfig) -> FastAPI:
    from threadpoolctl import threadpool_limits

    from mmkg.generation import ExtractiveGenerator

    # BLAS on one thread for the whole process: the reader limits it per query, which is not safe across
    # threads (each limit restores what it found); the query workers give the parallelism instead
    threadpool_limits(limits=1, user_api="blas")
    holder = IndexHolder(cfg.index_root, encoder=cfg.encoder, check_interval=cfg.check_interval)
    corpus = CorpusFolder(cfg.corpus_root, cfg.max_document_bytes) if cfg.corpus_root else None
    reindexer = (Reindexer(cfg.reindex_command, cfg.data_root / "logs" / "serve-reindex.log")
                 if cfg.reindex_command and corpus is not None else None)  # fmt: skip
    queries = _Pool("query", cfg.query_workers, cfg.max_pending)
    answers = _Pool("answer", cfg.answer_workers, cfg.max_pending)
    factories: dict[str, Callable[[], Any]] = {"extractive": ExtractiveGenerator, **cfg.generators}
    generators: dict[str, Any] = {}
    gen_lock = threading.Lock()

    def generator(name: str | None) -> Any:
        name = name or cfg.default_backend
        if name not in factories:
            raise ApiError(400, f"unknown backend {name!r}; this server has {sorted(factories)}")
        with gen_lock:
            if name not in generators:
                generators[name] = factories[name]()
            return generators[name]

    # /docs is served below from vendored Swagger UI files (FastAPI's default loads them from a CDN, a blank
    # page offline); ReDoc has no vendored copy, so it is off
    app = FastAPI(
        title="mmkg", version=_version(),
        description="Graph retrieval and grounded answers over a multimodal knowledge-graph index.",
        docs_url=None, redoc_url=None,
    )  # fmt: skip
    app.state.holder = holder
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
        return JSONResponse({"error": "invalid request: " + _explain(exc.errors())}, 422)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        error_id = uuid.uuid4().hex[:12]
        log.exception("request %s %s failed (error id %s)", request.method, request.url.path, error_id)
        return JSONResponse({"error": f"internal error (id {error_id}); the server log has the details"}, 500)

    # -- requests ------------------------------------------------------------------------------------

    async def parse(request: Request, model: type) -> tuple[Any, dict[str, Path], tempfile.TemporaryDirectory]:
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
                raise ApiError(422, "invalid request: " + _explain(exc.errors())) from exc
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

    def search(req: QueryRequest, files: dict[str, Path]) -> dict[str, Any]:
        from mmkg.query import Query

        index = holder.current()
        query = Query(text=req.text, image=files.get("image"), video=files.get("video"), audio=files.get("audio"))
        filters = req.filters.as_dict() if req.filters else None
        try:
            result = retrieval.search(index, query, k=req.k, strategy=req.strategy, preset=req.preset, filters=filters,
                                  **req.params)  # fmt: skip
        except (ValueError, TypeError) as exc:
            raise ApiError(400, str(exc)) from exc
        out = result.to_dict()
        out["query_image"] = "(uploaded)" if "image" in files else None  # not the server's temporary path
        for chunk in out["chunks"]:  # blob paths are server details: pictures are fetched by id
            for img in chunk["images"]:
                img.pop("blob_path", None)
        return out

    @app.post("/query", summary="Retrieve the chunks that answer a text, image, video or audio query")
    async def query(request: Request) -> JSONResponse:
        req, files, tmp = await parse(request, QueryRequest)
        try:
            return JSONResponse(await queries.run(search, req, files))
        finally:
            tmp.cleanup()

    def answer_now(req: AskRequest, files: dict[str, Path]) -> dict[str, Any]:
        from mmkg.generation import GenerationError, answer

        index = holder.current()
        filters = req.filters.as_dict() if req.filters else None
        try:
            ans = answer(index, req.text or "", generator(req.backend), image=files.get("image"),
                         strategy=req.strategy, task=req.task, k=req.k, filters=filters, max_tokens=req.max_tokens,
                         **req.params)  # fmt: skip
        except GenerationError as exc:
            raise ApiError(502, f"the generation backend failed: {exc}") from exc
        except (ValueError, TypeError, FileNotFoundError) as exc:
            raise ApiError(400, str(exc)) from exc
        return ans.to_dict()

    @app.post("/ask", summary="Answer a question from retrieved evidence, with citations (SSE when stream=true)")
    async def ask(request: Request) -> Any:
        req, files, tmp = await parse(request, AskRequest)
        if req.text is None:
            tmp.cleanup()
            raise ApiError(422, "invalid request: /ask needs the question as text")
        if not req.stream:
            try:
                return JSONResponse(await answers.run(answer_now, req, files))
            finally:
                tmp.cleanup()
        answers.enter()
        return StreamingResponse(_sse(req, files, tmp), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})  # fmt: skip

    async def _sse(req: AskRequest, files: dict[str, Path], tmp: tempfile.TemporaryDirectory) -> AsyncIterator[str]:
        from mmkg.generation import GenerationError, answer_stream

        loop = asyncio.get_running_loop()
        q: asyncio.Queue = asyncio.Queue()

        def work() -> None:
            try:
                index = holder.current()
                filters = req.filters.as_dict() if req.filters else None
                for piece in answer_stream(index, req.text or "", generator(req.backend), image=files.get("image"),
                                           strategy=req.strategy, task=req.task, k=req.k, filters=filters,
                                           max_tokens=req.max_tokens, **req.params):  # fmt: skip
                    loop.call_soon_threadsafe(q.put_nowait, ("delta", piece) if isinstance(piece, str) else
                                              ("answer", piece.to_dict()))  # fmt: skip
            except ApiError as exc:
                loop.call_soon_threadsafe(q.put_nowait, ("error", {"error": exc.message}))
            except GenerationError as exc:
                loop.call_soon_threadsafe(q.put_nowait, ("error", {"error": f"the generation backend failed: {exc}"}))
            except (ValueError, TypeError, FileNotFoundError) as exc:
                loop.call_soon_threadsafe(q.put_nowait, ("error", {"error": str(exc)}))
            except Exception:
                error_id = uuid.uuid4().hex[:12]
                log.exception("streamed answer failed (error id %s)", error_id)
                loop.call_soon_threadsafe(q.put_nowait, ("error", {"error": f"internal error (id {error_id})"}))
            finally:
                loop.call_soon_threadsafe(q.put_nowait, None)

        try:
            future = loop.run_in_executor(answers.executor, work)
            while (item := await q.get()) is not None:
                event, data = item
                yield f"event: {event}\ndata: {json.dumps(data if event != 'delta' else {'text': data})}\n\n"
            await future
        finally:
            answers.leave()
            tmp.cleanup()

    @app.post("/subgraph", summary="The entities, pictures and links around some chunks (for drawing)")
    async def subgraph(req: SubgraphRequest) -> JSONResponse:
        return JSONResponse(await queries.run(_subgraph, holder.current(), req))

    @app.get("/graph/node", summary="One graph node (id KIND:KEY): its text or picture and where it occurs")
    async def graph_node(id: str) -> JSONResponse:
        from mmkg.api.graph_view import UnknownNode, node_details

        try:
            return JSONResponse(json.loads(json.dumps(await queries.run(node_details, holder.current(), id),
                                                      default=str)))  # fmt: skip
        except UnknownNode as exc:
            raise ApiError(404, str(exc)) from exc

    @app.post("/graph/expand", summary="A drawn node's neighbours that are not drawn yet, with their edges")
    async def graph_expand(req: ExpandRequest) -> JSONResponse:
        from mmkg.api.graph_view import UnknownNode, expand

        try:
            return JSONResponse(await queries.run(expand, holder.current(), req.node, req.known, req.limit))
        except UnknownNode as exc:
            raise ApiError(404, str(exc)) from exc

    # -- reading the index -----------------------------------------------------------------------------

    @app.get("/health", summary="Liveness, and the version served")
    async def health() -> dict[str, Any]:
        index = holder.current()
        return {"status": "ok", "version": index.version, "reload_error": holder.reload_error,
                "pending": {"query": queries.pending, "answer": answers.pending}}  # fmt: skip

    @app.get("/index", summary="Version, counts, encoder, partitions and the server's backends")
    async def index_info() -> dict[str, Any]:
        index = holder.current()
        m = index.manifest
        return {
            "version": index.version, "created_at": m.created_at, "encoder": m.encoder.id,
            "partitions": sorted(m.partitions), "counts": m.counts, "backends": sorted(factories),
            "default_backend": cfg.default_backend, "documents": corpus is not None,
        }  # fmt: skip

    @app.get("/index/overview", summary="The index: partitions, documents, versions, the last build, rejected files")
    async def index_overview() -> JSONResponse:
        from mmkg.api.index_view import overview

        out = await queries.run(overview, holder.current(), cfg.data_root)
        out["reindex"] = reindexer.state() if reindexer is not None else None
        return JSONResponse(json.loads(json.dumps(out, default=str)))

    @app.get("/strategies", summary="Every retrieval strategy with its presets and parameters")
    async def strategies() -> list[dict[str, Any]]:
        from mmkg.retrieval.registry import describe

        return json.loads(json.dumps(describe(), default=str))

    @app.get("/chunks/{chunk_id}", summary="One chunk: text, document, page or time span, pictures and objects")
    async def chunk(chunk_id: str) -> dict[str, Any]:
        index = holder.current()
        row = ev.chunk_record(index, chunk_id)
        if row is None:
            raise ApiError(404, f"no chunk {chunk_id!r} in index version {index.version}")
        [hit] = ev.chunks(index, index.chunk_rows([chunk_id]), _zeros(index))
        out = json.loads(json.dumps(_asdict(hit), default=str))
        for img in out["images"]:
            img.pop("blob_path", None)
        return out

    def picture(image_id: str) -> tuple[Any, dict]:
        index = holder.current()
        row = ev.image_record(index, image_id)
        if row is None:
            raise ApiError(404, f"no picture {image_id!r} in index version {index.version}")
        return index, row

    @app.get("/images/{image_id}", summary="A picture's bytes", response_class=FileResponse)
    async def image(image_id: str) -> FileResponse:
        _, row = picture(image_id)
        return FileResponse(_blob(cfg.data_root, row["blob_path"]))

    @app.get("/images/{image_id}/objects", summary="The grounded objects of a picture: boxes, entities, σ")
    async def image_objects(image_id: str) -> dict[str, Any]:
        index, row = picture(image_id)
        objs = index.objects.filter(index.objects["image_id"] == image_id)
        return {
            "image_id": image_id, "width": row.get("width"), "height": row.get("height"),
            "objects": [
                {"object_id": o["object_id"], "entity_name": o["entity_name"], "backend": o["backend"],
                 "score": float(o["score"]), "box": [float(o[c]) for c in ("x0", "y0", "x1", "y1")]}
                for o in objs.iter_rows(named=True)
            ],
        }  # fmt: skip

    @app.get("/objects/{object_id}/crop", summary="A grounded object's crop", response_class=FileResponse)
    async def crop(object_id: str) -> FileResponse:
        index = holder.current()
        objs = index.objects.filter(index.objects["object_id"] == object_id)
        if objs.is_empty() or not objs["crop_path"][0]:
            raise ApiError(404, f"no object {object_id!r} with a crop in index version {index.version}")
        return FileResponse(_blob(cfg.data_root, objs["crop_path"][0]))

    # -- documents ---------------------------------------------------------------------------------------

    def documents_folder() -> CorpusFolder:
        if corpus is None:
            raise ApiError(503, "this server has no corpus folder: start it with --corpus to accept documents")
        return corpus

    @app.post("/documents", summary="Put files into a corpus partition folder (then re-indexed: GET /index/reindex)")
    async def put_documents(request: Request) -> JSONResponse:
        folder = documents_folder()
        if not request.headers.get("content-type", "").startswith("multipart/form-data"):
            raise ApiError(415, "send the files as multipart/form-data with a 'partition' field and 'files'")
        form = await request.form(max_files=100, max_part_size=folder.max_bytes + 1)
        partition = form.get("partition")
        if not isinstance(partition, str):
            raise ApiError(422, "invalid request: the 'partition' field is required")
        overwrite = str(form.get("overwrite", "false")).lower() in ("1", "true", "yes")
        uploads = [f for f in form.getlist("files") if not isinstance(f, str)]
        if not uploads:
            raise ApiError(422, "invalid request: no 'files' were uploaded")
        saved, rejected = [], []
        for upload in uploads:
            data = await upload.read(folder.max_bytes + 1)
            try:
                saved.append(folder.put(partition, upload.filename or "", data, overwrite))
            except DocumentError as exc:
                rejected.append({"name": upload.filename, "reason": str(exc)})
        if not saved and rejected and any("is not a folder name" in r["reason"] for r in rejected):
            raise ApiError(400, rejected[0]["reason"])
        body = {"saved": saved, "rejected": rejected, **folder.pickup(partition, reindexer is not None)}
        if saved and reindexer is not None:
            body["reindex"] = reindexer.request(f"{len(saved)} file(s) put into {partition}")
        return JSONResponse(body, 201 if saved else 400)

    @app.delete("/documents/{partition}/{path:path}", summary="Remove a file from a corpus partition folder")
    async def delete_document(partition: str, path: str) -> dict[str, Any]:
        folder = documents_folder()
        try:
            removed = folder.delete(partition, path)
        except DocumentError as exc:
            raise ApiError(400, str(exc)) from exc
        except FileNotFoundError as exc:
            raise ApiError(404, str(exc)) from exc
        body = {"removed": removed, **folder.pickup(partition, reindexer is not None)}
        if reindexer is not None:
            body["reindex"] = reindexer.request(f"{removed['path']} removed")
        return body

    @app.get("/index/reindex", summary="The server's re-index after uploads: idle or running, the last run, its log")
    async def reindex_state() -> dict[str, Any]:
        if reindexer is None:
            how = ("this server does not re-index: start it with --corpus (and without --no-reindex) for uploads to "
                   "run `mmkg index update`, or run a Dagster daemon (mmkg ui) whose corpus sensor picks them up")
            return {"state": "off", "how": how}
        return reindexer.state()

    # -- the page --------------------------------------------------------------------------------------------

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> FileResponse:
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> Any:
        from fastapi.openapi.docs import get_swagger_ui_html
        from fastapi.responses import HTMLResponse

        if not (VENDOR / "swagger-ui-bundle.js").is_file():
            return HTMLResponse(
                "<h1>API docs are not installed</h1><p>Swagger UI is vendored at setup: run "
                "<code>bash scripts/setup.sh</code> with npm available. The schema is at "
                '<a href="/openapi.json">/openapi.json</a>.</p>',
                status_code=503,
            )
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json", title="mmkg API",
            swagger_js_url="/static/vendor/swagger-ui-bundle.js", swagger_css_url="/static/vendor/swagger-ui.css",
            swagger_favicon_url="/favicon.ico",
        )  # fmt: skip

    if STATIC.is_dir():
        from fastapi.staticfiles import StaticFiles

        app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


# -- helpers ----------------------------------------------------------------------------------------------


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mmkg")
    except PackageNotFoundError:
        return "0"


def _explain(errors: Any) -> str:
    """Pydantic errors as one line: ``k: Input should be a valid integer; text: ...`` (no input echoed)."""
    parts = []
    for e in errors:
        loc = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
        parts.append(f"{loc}: {e.get('msg', 'invalid')}")
    return "; ".join(parts)


def _blob(data_root: Path, rel: str) -> Path:
    root = Path(data_root).resolve()
    path = (root / rel).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        raise ApiError(404, "the file of this item is missing from the data root")
    return path


def _zeros(index: Any) -> Any:
    import numpy as np

    return np.zeros(index.n_chunks, dtype=np.float32)


def _asdict(obj: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(obj)


def _subgraph(index: Any, req: SubgraphRequest) -> dict[str, Any]:
    """Chunks, the entities they mention (most connected first) and their pictures, with the edges among them."""
    import numpy as np

    from mmkg.api.graph_view import node_label

    pos = index.positions["chunks"]
    rows = [pos[c] for c in req.chunk_ids if c in pos]
    if not rows:
        raise ApiError(404, f"none of the chunks are in index version {index.version}")
    adj = index.graph.adjacency
    nodes = index.graph.nodes
    kinds = nodes["kind"].to_list()
    keys = nodes["key"].to_list()
    names = ev.entity_names(index)
    chunk_rows = set(rows)
    entity_hits: dict[int, int] = {}
    images: set[int] = set()
    for r in rows:
        nbrs = adj.indices[adj.indptr[r] : adj.indptr[r + 1]]
        for n in nbrs.tolist():
            if kinds[n] == "entity":
                entity_hits[n] = entity_hits.get(n, 0) + 1
            elif kinds[n] == "image":
                images.add(n)
    entities = sorted(entity_hits, key=lambda n: (-entity_hits[n], keys[n]))[: req.max_entities]
    keep = sorted(chunk_rows | set(entities) | images)
    sub = adj[np.array(keep)][:, np.array(keep)].tocoo()
    out_nodes = []
    for n in keep:
        kind = kinds[n]
        if kind == "chunk":
            c = ev.chunk_record(index, keys[n]) or {}
            label = (c.get("title") or "chunk") + (f" p.{c['page']}" if c.get("page") else "")
        elif kind == "entity":
            label = names.get(keys[n], (keys[n], ""))[0]
        else:
            label = node_label(index, kind, keys[n])  # the picture's file name
        out_nodes.append({"id": f"{kind}:{keys[n]}", "kind": kind, "key": keys[n], "label": label})
    edges = [
        {"source": out_nodes[i]["id"], "target": out_nodes[j]["id"], "weight": float(w)}
        for i, j, w in zip(sub.row.tolist(), sub.col.tolist(), sub.data.tolist(), strict=True)
        if i < j
    ]
    return {"version": index.version, "nodes": out_nodes, "edges": edges}
