"""Reading routes: ``POST /query``, ``POST /ask`` (server-sent events with ``"stream": true``), and the page's
graph: ``POST /subgraph``, ``GET /graph/node``, ``POST /graph/expand`` (``mmkg.api.graph_view``)."""

from __future__ import annotations

import asyncio
import json
import logging
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, StreamingResponse

from mmkg.api.models import AskRequest, ExpandRequest, QueryRequest, SubgraphRequest
from mmkg.api.server import ApiError, Served, parse_request, served
from mmkg.retrieval import engine as retrieval

log = logging.getLogger("mmkg.api.app")
router = APIRouter()


def search(srv: Served, req: QueryRequest, files: dict[str, Path]) -> dict[str, Any]:
    from mmkg.query import Query

    index = srv.holder.current()
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

@router.post("/query", summary="Retrieve the chunks that answer a text, image, video or audio query")
async def query(request: Request, srv: Annotated[Served, Depends(served)]) -> JSONResponse:
    req, files, tmp = await parse_request(request, QueryRequest)
    try:
        return JSONResponse(await srv.queries.run(search, srv, req, files))
    finally:
        tmp.cleanup()

def answer_now(srv: Served, req: AskRequest, files: dict[str, Path]) -> dict[str, Any]:
    from mmkg.generation import GenerationError, answer

    index = srv.holder.current()
    filters = req.filters.as_dict() if req.filters else None
    try:
        ans = answer(index, req.text or "", srv.generator(req.backend), image=files.get("image"),
                     strategy=req.strategy, task=req.task, k=req.k, filters=filters, max_tokens=req.max_tokens,
                     **req.params)  # fmt: skip
    except GenerationError as exc:
        raise ApiError(502, f"the generation backend failed: {exc}") from exc
    except (ValueError, TypeError, FileNotFoundError) as exc:
        raise ApiError(400, str(exc)) from exc
    return ans.to_dict()

@router.post("/ask", summary="Answer a question from retrieved evidence, with citations (SSE when stream=true)")
async def ask(request: Request, srv: Annotated[Served, Depends(served)]) -> Any:
    req, files, tmp = await parse_request(request, AskRequest)
    if req.text is None:
        tmp.cleanup()
        raise ApiError(422, "invalid request: /ask needs the question as text")
    if not req.stream:
        try:
            return JSONResponse(await srv.answers.run(answer_now, srv, req, files))
        finally:
            tmp.cleanup()
    srv.answers.enter()
    return StreamingResponse(_sse(srv, req, files, tmp), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache"})  # fmt: skip

async def _sse(srv: Served, req: AskRequest, files: dict[str, Path],
               tmp: tempfile.TemporaryDirectory) -> AsyncIterator[str]:  # fmt: skip
    from mmkg.generation import GenerationError, answer_stream

    loop = asyncio.get_running_loop()
    q: asyncio.Queue = asyncio.Queue()

    def work() -> None:
        try:
            index = srv.holder.current()
            filters = req.filters.as_dict() if req.filters else None
            for piece in answer_stream(index, req.text or "", srv.generator(req.backend), image=files.get("image"),
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
        future = loop.run_in_executor(srv.answers.executor, work)
        while (item := await q.get()) is not None:
            event, data = item
            yield f"event: {event}\ndata: {json.dumps(data if event != 'delta' else {'text': data})}\n\n"
        await future
    finally:
        srv.answers.leave()
        tmp.cleanup()

@router.post("/subgraph", summary="The entities, pictures and links around some chunks (for drawing)")
async def subgraph(req: SubgraphRequest, srv: Annotated[Served, Depends(served)]) -> JSONResponse:
    from mmkg.api.graph_view import UnknownNode, subgraph

    try:
        return JSONResponse(await srv.queries.run(subgraph, srv.holder.current(), req.chunk_ids, req.max_entities))
    except UnknownNode as exc:
        raise ApiError(404, str(exc)) from exc


@router.get("/graph/node", summary="One graph node (id KIND:KEY): its text or picture and where it occurs")
async def graph_node(id: str, srv: Annotated[Served, Depends(served)]) -> JSONResponse:
    from mmkg.api.graph_view import UnknownNode, node_details

    try:
        return JSONResponse(json.loads(json.dumps(await srv.queries.run(node_details, srv.holder.current(), id),
                                                  default=str)))  # fmt: skip
    except UnknownNode as exc:
        raise ApiError(404, str(exc)) from exc

@router.post("/graph/expand", summary="A drawn node's neighbours that are not drawn yet, with their edges")
async def graph_expand(req: ExpandRequest, srv: Annotated[Served, Depends(served)]) -> JSONResponse:
    from mmkg.api.graph_view import UnknownNode, expand

    try:
        return JSONResponse(await srv.queries.run(expand, srv.holder.current(), req.node, req.known, req.limit))
    except UnknownNode as exc:
        raise ApiError(404, str(exc)) from exc

