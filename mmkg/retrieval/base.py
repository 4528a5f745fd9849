"""What every retrieval strategy shares: strict parameters and the ``Strategy`` protocol.

The query itself, its limits and ``QueryError`` are the ground module ``mmkg.query``, which the index
uses too; ``Query`` and ``Filters`` are re-exported here for the strategies.

A strategy reads one published index through its data-access methods (``mmkg.index.Index``) and
returns a ``RetrievalResult``: ranked chunks plus the graph evidence it selected. Its parameters are
a frozen dataclass derived from ``Params``: ``override`` returns a changed copy and refuses names
it does not know, so a typo is an error, not a silently ignored setting.
"""

from __future__ import annotations

import re
import types
import typing
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self

from mmkg.query import Filters, Query  # the query boundary (``mmkg.query``), shared with the index

if TYPE_CHECKING:
    from mmkg.index.reader import Index
    from mmkg.retrieval.results import RetrievalResult

__all__ = ["Filters", "Params", "PresetStrategy", "Query", "Strategy", "param"]


def _coerce(value: Any, annotation: Any, name: str) -> Any:
    """A value given as a string on the command line, converted to the field's declared type."""
    if not isinstance(value, str):
        return value
    hint = annotation
    if isinstance(hint, str):
        hint = {"int": int, "float": float, "bool": bool, "str": str, "int | None": int | None,
                "str | None": str | None}.get(hint, hint)  # fmt: skip
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) else ()
    if args and type(None) in args:
        if value.lower() in ("none", "null", ""):
            return None
        hint = next(a for a in args if a is not type(None))
    try:
        if hint is bool:
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if hint in (int, float):
            return hint(value)
    except ValueError as exc:
        wanted = {bool: "true or false", int: "a whole number", float: "a number"}.get(hint, str(hint))
        raise ValueError(f"parameter {name}: {value} is not {wanted} (--param {name}=VALUE)") from exc
    return value


@dataclass(frozen=True)
class Params:
    """Base of every strategy's parameters: a frozen dataclass whose fields document themselves.

    Give each field ``metadata={"doc": "..."}`` (see ``param``); ``describe`` lists them for the CLI.
    """

    def override(self, **changes: Any) -> Self:
        """A copy with some parameters changed; unknown names are an error that lists the known ones."""
        known = {f.name: f for f in fields(self)}
        unknown = sorted(set(changes) - set(known))
        if unknown:
            raise ValueError(f"unknown parameter(s) {unknown} for {type(self).__name__}; known: {sorted(known)}")
        typed = {k: _coerce(v, known[k].type, k) for k, v in changes.items()}
        return replace(self, **typed)

    @classmethod
    def refused_from_clients(cls, changes: dict[str, Any]) -> list[str]:
        """The names in ``changes`` that a client over HTTP may not set (``param(server=...)``), sorted.

        They name models, checkpoints, files or endpoints of the server: set from a request, they would let a
        client read files outside the server's roots, load code, or make the server call any URL.
        """
        out = []
        for f in fields(cls):
            if f.name not in changes or not (kind := f.metadata.get("server")):
                continue
            value = changes[f.name]
            if kind == "always" or (isinstance(value, str) and _PATHLIKE.search(value)):
                out.append(f.name)
        return sorted(out)

    @classmethod
    def describe(cls, defaults: Params | None = None) -> list[tuple[str, str, Any, str]]:
        """``(name, type, default, what it does)`` for every parameter."""
        out = []
        for f in fields(cls):
            if defaults is not None:
                default = getattr(defaults, f.name)
            else:
                default = f.default if f.default is not MISSING else None
            out.append((f.name, str(f.type), default, f.metadata.get("doc", "")))
        return out


def param(default: Any, doc: str, server: str | None = None) -> Any:
    """A dataclass field with its documentation (shown by ``mmkg strategies``); ``MISSING``: required.

    ``server`` marks a parameter that reaches the machine the query runs on, which a client over HTTP must
    not set (``Params.refused_from_clients``): ``"always"`` (a model, checkpoint, file or endpoint) or
    ``"paths"`` (names of shipped resources are fine, a path is not).
    """
    if server not in (None, "always", "paths"):
        raise ValueError(f"server must be None, 'always' or 'paths'; got {server!r}")
    return field(default=default, metadata={"doc": doc, **({"server": server} if server else {})})


_PATHLIKE = re.compile(r"[/\\:~]|\.\.|\.json$", re.IGNORECASE)


class Strategy(Protocol):
    """One retrieval method over the shared index: ``retrieve(index, query, k, filters) -> RetrievalResult``.

    Implementations are plain classes holding their ``params``; ``registry.py`` names them.
    """

    name: ClassVar[str]
    summary: ClassVar[str]  # one line: what it does, shown by ``mmkg strategies``
    modalities: ClassVar[frozenset[str]]  # query modalities it answers
    params: Params

    def retrieve(self, index: Index, query: Query, k: int, filters: Filters = None) -> RetrievalResult: ...


class PresetStrategy:
    """What strategies with named presets share: their parameters (a preset's, or given) and the empty result.

    A subclass sets ``name``, ``summary``, ``modalities``, ``presets``, ``default_preset`` and implements
    ``retrieve``, starting its result with ``self.new_result(index, query)``.
    """

    name: ClassVar[str]
    presets: ClassVar[dict[str, Any]]
    default_preset: ClassVar[str]

    def __init__(self, params: Any = None, preset: str | None = None):
        self.params = params if params is not None else self.presets[self.default_preset]
        self.preset = preset or (self.default_preset if params is None else "custom")

    def new_result(self, index: Index, query: Query) -> RetrievalResult:
        """An empty result naming the index version, this strategy, its preset and parameters, and the query."""
        from dataclasses import asdict

        from mmkg.retrieval.results import RetrievalResult

        return RetrievalResult(
            version=index.version, strategy=self.name, preset=self.preset, query_text=query.text,
            query_image=str(query.image) if query.image is not None else None, chunks=[], params=asdict(self.params),
        )  # fmt: skip
