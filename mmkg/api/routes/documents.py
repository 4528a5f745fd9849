"""Routes that change the corpus: ``POST /documents`` and ``DELETE /documents/{partition}/{path}`` (confined to
the corpus root, ``mmkg.api.documents``), which start the server's re-index (``mmkg.api.reindex``), and
``GET /index/reindex``, its state."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from mmkg.api.documents import CorpusFolder, DocumentError
from mmkg.api.server import ApiError, Served, served

router = APIRouter()


def documents_folder(srv: Served) -> CorpusFolder:
    if srv.corpus is None:
        raise ApiError(503, "this server has no corpus folder: start it with --corpus to accept documents")
    return srv.corpus

@router.post("/documents", summary="Put files into a corpus partition folder (then re-indexed: GET /index/reindex)")
async def put_documents(request: Request, srv: Annotated[Served, Depends(served)]) -> JSONResponse:
    folder = documents_folder(srv)
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
    if saved:
        body = {"saved": saved, "rejected": rejected, **folder.pickup(partition, srv.reindexer is not None)}
    else:  # nothing reached the corpus: nothing will be re-indexed, and the folder is as it was
        body = {"saved": [], "rejected": rejected, "partition": partition,
                "picked_up_by": "nothing: no file was saved, so the corpus is unchanged"}  # fmt: skip
    if saved and srv.reindexer is not None:
        body["reindex"] = srv.reindexer.request(f"{len(saved)} file(s) put into {partition}")
    return JSONResponse(body, 201 if saved else 400)

@router.delete("/documents/{partition}/{path:path}", summary="Remove a file from a corpus partition folder")
async def delete_document(partition: str, path: str, srv: Annotated[Served, Depends(served)]) -> dict[str, Any]:
    folder = documents_folder(srv)
    try:
        removed = folder.delete(partition, path)
    except DocumentError as exc:
        raise ApiError(400, str(exc)) from exc
    except FileNotFoundError as exc:
        raise ApiError(404, str(exc)) from exc
    body = {"removed": removed, **folder.pickup(partition, srv.reindexer is not None)}
    if srv.reindexer is not None:
        body["reindex"] = srv.reindexer.request(f"{removed['path']} removed")
    return body

@router.get("/index/reindex", summary="The server's re-index after uploads: idle or running, the last run, its log")
async def reindex_state(srv: Annotated[Served, Depends(served)]) -> dict[str, Any]:
    if srv.reindexer is None:
        how = ("this server does not re-index: start it with --corpus (and without --no-reindex) for uploads to "
               "run `mmkg index update`, or run a Dagster daemon (mmkg ui) whose corpus sensor picks them up")
        return {"state": "off", "how": how}
    return srv.reindexer.state()

