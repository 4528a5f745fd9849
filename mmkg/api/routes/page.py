"""The web page and its files: ``/`` (``static/index.html``), ``/favicon.ico``, ``/docs`` (Swagger UI from
vendored files: FastAPI's default loads them from a CDN, a blank page offline; ReDoc has no vendored copy)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse

STATIC = Path(__file__).resolve().parent.parent / "static"
VENDOR = STATIC / "vendor"  # JavaScript and CSS copied from web/node_modules by scripts/setup.sh
router = APIRouter()


@router.get("/", include_in_schema=False)
async def page() -> FileResponse:
    return FileResponse(STATIC / "index.html")

@router.get("/favicon.ico", include_in_schema=False)
async def favicon() -> FileResponse:
    return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")

@router.get("/docs", include_in_schema=False)
async def docs(request: Request) -> Any:
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
        openapi_url=request.app.openapi_url or "/openapi.json", title="mmkg API",
        swagger_js_url="/static/vendor/swagger-ui-bundle.js", swagger_css_url="/static/vendor/swagger-ui.css",
        swagger_favicon_url="/favicon.ico",
    )  # fmt: skip

