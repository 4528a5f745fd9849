"""The routes of ``mmkg serve``, one module per concern, included by ``create_app`` in this order."""

from mmkg.api.routes import documents, index, page, reading

ROUTERS = (reading.router, index.router, documents.router, page.router)
