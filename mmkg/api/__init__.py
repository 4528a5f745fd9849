"""The HTTP API and web page over a published index (``mmkg serve``); see ``mmkg.api.app``."""

from mmkg.api.app import ServeConfig, create_app

__all__ = ["ServeConfig", "create_app"]
