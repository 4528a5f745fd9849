"""Routes that read the index: ``GET /health``, ``/index``, ``/index/overview`` (``mmkg.api.index_view``),
``/strategies``, ``/chunks/{id}``, ``/images/{id}`` (the picture), ``/images/{id}/objects``, ``/objects/{id}/crop``,
``/media/{doc_id}`` (a recording, for the page's player). Files are served only by id: pictures from the index's own
blobs under the data root, recordings from the corpus root (``mmkg.api.media``)."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import FileResponse, JSONResponse

from mmkg.api.server import ApiError, Served, asdict, blob, served, zeros
from mmkg.retrieval import evidence as ev

router = APIRouter()


@router.get("/health", summary="Liveness, and the version served")
async def health(srv: Annotated[Served, Depends(served)]) -> dict[str, Any]:
    index = srv.holder.current()
    return {"status": "ok", "version": index.version, "reload_error": srv.holder.reload_error,
            "pending": {"query": srv.queries.pending, "answer": srv.answers.pending}}  # fmt: skip

@router.get("/index", summary="Version, counts, encoder, partitions and the server's backends")
async def index_info(srv: Annotated[Served, Depends(served)]) -> dict[str, Any]:
    index = srv.holder.current()
    m = index.manifest
    return {
        "version": index.version, "created_at": m.created_at, "encoder": m.encoder.id,
        "partitions": sorted(m.partitions), "counts": m.counts, "backends": sorted(srv.factories),
        "default_backend": srv.cfg.default_backend, "documents": srv.corpus is not None,
    }  # fmt: skip

@router.get("/index/overview", summary="The index: partitions, documents, versions, the last build, rejected files")
async def index_overview(srv: Annotated[Served, Depends(served)]) -> JSONResponse:
    from mmkg.api.index_view import overview

    out = await srv.queries.run(overview, srv.holder.current(), srv.cfg.data_root)
    out["reindex"] = srv.reindexer.state() if srv.reindexer is not None else None
    return JSONResponse(json.loads(json.dumps(out, default=str)))

@router.get("/strategies", summary="Every retrieval strategy with its presets and parameters")
async def strategies() -> list[dict[str, Any]]:
    from mmkg.retrieval.registry import describe

    return json.loads(json.dumps(describe(), default=str))

@router.get("/chunks/{chunk_id}", summary="One chunk: text, document, page or time span, pictures and objects")
async def chunk(chunk_id: str, srv: Annotated[Served, Depends(served)]) -> dict[str, Any]:
    index = srv.holder.current()
    row = ev.chunk_record(index, chunk_id)
    if row is None:
        raise ApiError(404, f"no chunk {chunk_id!r} in index version {index.version}")
    [hit] = ev.chunks(index, index.chunk_rows([chunk_id]), zeros(index))
    out = json.loads(json.dumps(asdict(hit), default=str))
    for img in out["images"]:
        img.pop("blob_path", None)
    return out

def picture(srv: Served, image_id: str) -> tuple[Any, dict]:
    index = srv.holder.current()
    row = ev.image_record(index, image_id)
    if row is None:
        raise ApiError(404, f"no picture {image_id!r} in index version {index.version}")
    return index, row

@router.get("/images/{image_id}", summary="A picture's bytes", response_class=FileResponse)
async def image(image_id: str, srv: Annotated[Served, Depends(served)]) -> FileResponse:
    _, row = picture(srv, image_id)
    return FileResponse(blob(srv.cfg.data_root, row["blob_path"]))

@router.get("/images/{image_id}/objects", summary="The grounded objects of a picture: boxes, entities, σ")
async def image_objects(image_id: str, srv: Annotated[Served, Depends(served)]) -> dict[str, Any]:
    index, row = picture(srv, image_id)
    objs = index.objects.filter(index.objects["image_id"] == image_id)
    return {
        "image_id": image_id, "width": row.get("width"), "height": row.get("height"),
        "objects": [
            {"object_id": o["object_id"], "entity_name": o["entity_name"], "backend": o["backend"],
             "score": float(o["score"]), "box": [float(o[c]) for c in ("x0", "y0", "x1", "y1")]}
            for o in objs.iter_rows(named=True)
        ],
    }  # fmt: skip

@router.get("/media/{doc_id}", summary="A recording of the index (video or audio), with HTTP ranges for seeking",
            response_class=FileResponse)  # fmt: skip
async def media(doc_id: str, srv: Annotated[Served, Depends(served)]) -> FileResponse:
    from mmkg.api.media import MediaUnavailable, recording

    try:
        path = recording(srv.holder.current(), doc_id, srv.corpus.root if srv.corpus is not None else None)
    except MediaUnavailable as exc:
        raise ApiError(exc.status, str(exc)) from None
    return FileResponse(path)

@router.get("/objects/{object_id}/crop", summary="A grounded object's crop", response_class=FileResponse)
async def crop(object_id: str, srv: Annotated[Served, Depends(served)]) -> FileResponse:
    index = srv.holder.current()
    objs = index.objects.filter(index.objects["object_id"] == object_id)
    if objs.is_empty() or not objs["crop_path"][0]:
        raise ApiError(404, f"no object {object_id!r} with a crop in index version {index.version}")
    return FileResponse(blob(srv.cfg.data_root, objs["crop_path"][0]))

