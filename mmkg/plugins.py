"""One way to plug a backend in: a named registry per kind, filled by this package and by installed plugins.

Every kind of backend (``ENCODERS`` in ``mmkg.encoders``, ``GENERATORS`` in ``mmkg.generation``,
``GROUNDERS`` in ``mmkg.vision``, ``FORMATS`` in ``mmkg.ingest.formats``; retrieval strategies keep their
own ``mmkg.retrieval.registry``, which also takes entry points) is a ``Registry``: a name maps to a factory
that builds the backend. A backend is added by one module and one registration::

    from mmkg.encoders import ENCODERS

    @ENCODERS.register("hashing", help="feature-hashed bag of words, no model")
    def hashing_encoder(model: str, device: str, runtime: str) -> Encoder: ...

An installed package adds one without touching this code through an entry point in the group
``mmkg.<kind>`` (``mmkg.encoders``, ``mmkg.generators``, ``mmkg.grounders``, ``mmkg.formats``) naming
a module whose import registers it, or the factory itself (registered under the entry point's name)::

    [project.entry-points."mmkg.encoders"]
    hashing = "my_package.hashing:hashing_encoder"

Entry points are read the first time a name is not found, so a plain run never pays for them. The worked
examples of ``docs/extending.md`` are real files (``docs/examples/``) that ``tests/test_extending.py`` runs.

Hand-written rather than pluggy: four registries of named factories need lookup, listing and entry
points, not hooks with call ordering; this is about sixty lines that the whole package shares.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Entry(Generic[F]):
    name: str
    factory: F
    help: str = ""


class Registry(Generic[F]):
    """Named factories of one kind of backend (``kind`` names it in errors; ``group`` is its entry points)."""

    def __init__(self, kind: str, group: str):
        self.kind = kind
        self.group = group
        self._entries: dict[str, Entry[F]] = {}
        self._loaded_plugins = False

    def register(self, name: str, factory: F | None = None, *, help: str = "", replace: bool = False) -> Any:
        """Register ``factory`` under ``name``; without ``factory``, a decorator that does. A name taken by
        another factory is refused unless ``replace`` says so (a plugin must not shadow a backend silently)."""

        def add(f: F) -> F:
            key = name.strip().lower()
            old = self._entries.get(key)
            if old is not None and old.factory is not f and not replace:
                raise ValueError(f"{self.kind} {key!r} is already registered ({_where(old.factory)}); "
                                 "pass replace=True to override it")  # fmt: skip
            self._entries[key] = Entry(key, f, help or (f.__doc__ or "").strip().split("\n")[0])
            return f

        return add(factory) if factory is not None else add

    def get(self, name: str) -> F:
        """The factory registered as ``name`` (installed plugins are looked up once on a miss)."""
        key = (name or "").strip().lower()
        if key not in self._entries:
            self.load_plugins()
        if key not in self._entries:
            raise ValueError(f"unknown {self.kind} {name!r}; choose one of {', '.join(self.names())}")
        return self._entries[key].factory

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a plugin reloaded, a test that registered an example); absent names are ignored."""
        self._entries.pop(name.strip().lower(), None)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.strip().lower() in self._entries

    def __iter__(self) -> Iterator[Entry[F]]:
        return iter(sorted(self._entries.values(), key=lambda e: e.name))

    def load_plugins(self) -> None:
        """Import the entry points of ``group``: a module (registers on import) or a factory (registered)."""
        if self._loaded_plugins:
            return
        self._loaded_plugins = True
        for ep in entry_points(group=self.group):
            obj = ep.load()
            if callable(obj) and ep.name.strip().lower() not in self._entries:
                self.register(ep.name, obj)


def _where(f: Any) -> str:
    return f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', repr(f))}"
