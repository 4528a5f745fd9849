"""The strategies a query can name. A new strategy is one module plus one line in ``BUILTIN`` (or, outside this
package, ``register_strategy`` or an entry point of the group ``mmkg.strategies``).

A strategy's module is imported when a query first names it (``STRATEGIES[name]``), so opening an index for
one query loads that strategy and no other; listing the names loads nothing, describing them loads all.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from dataclasses import fields
from importlib import import_module
from typing import Any

from mmkg.retrieval.base import Params, Strategy

#: name -> "module:Class" of the strategies shipped in this package, imported on first use
BUILTIN: dict[str, str] = {
    "mg2": "mmkg.retrieval.mg2:MG2",
    "mkg": "mmkg.retrieval.mkg:MKG",
    "r2ag": "mmkg.retrieval.r2ag:R2AG",
    "mmgraph": "mmkg.retrieval.mmgraph:MMGraph",
    "m3kg": "mmkg.retrieval.m3kg:M3KG",
}


class _Strategies(MutableMapping[str, type]):
    """name -> strategy class (``name``, ``summary``, ``modalities``, ``presets``, ``default_preset``,
    ``retrieve``): a dict whose built-in entries are imported when first looked up.

    Unlike a dict: a built-in whose module fails to import raises that ImportError on lookup (``get`` too),
    naming the missing dependency instead of hiding the strategy; and a name replaced with
    ``register_strategy(..., replace=True)`` moves to the end of the iteration order."""

    def __init__(self, lazy: dict[str, str]) -> None:
        self._lazy = dict(lazy)
        self._loaded: dict[str, type] = {}

    def __getitem__(self, name: str) -> type:
        if name not in self._loaded:
            spec = self._lazy[name]  # KeyError for an unknown name, as a dict
            module, _, attr = spec.partition(":")
            cls = getattr(import_module(module), attr)
            if cls.name != name:
                raise RuntimeError(f"{spec} is registered as {name!r} but names itself {cls.name!r}")
            self._loaded[name] = cls
        return self._loaded[name]

    def __setitem__(self, name: str, cls: type) -> None:
        self._lazy.pop(name, None)
        self._loaded[name] = cls

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._lazy.pop(name, None)
        self._loaded.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._loaded or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._lazy, *self._loaded]))

    def __len__(self) -> int:
        return len(set(self._lazy) | set(self._loaded))

    def loaded(self) -> list[str]:
        """The names whose module has been imported (tests, and the import-cost check)."""
        return sorted(self._loaded)


STRATEGIES = _Strategies(BUILTIN)

DEFAULT_STRATEGY = "mg2"
#: entry points that add strategies from installed packages (``mmkg.plugins``): a strategy class, or a module
#: that calls ``register_strategy`` when imported
PLUGIN_GROUP = "mmkg.strategies"
_plugins_loaded = False


def register_strategy(cls: type, replace: bool = False) -> type:
    """Add a strategy class under its ``name`` (usable as a decorator); a taken name is refused unless
    ``replace`` says so."""
    old = STRATEGIES.get(cls.name) if cls.name in STRATEGIES and not replace else None
    if old is not None and old is not cls:
        raise ValueError(f"strategy {cls.name!r} is already registered ({old.__module__}.{old.__qualname__}); "
                         "pass replace=True to override it")  # fmt: skip
    STRATEGIES[cls.name] = cls
    return cls


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=PLUGIN_GROUP):
        obj = ep.load()
        if isinstance(obj, type) and obj.name not in STRATEGIES:
            register_strategy(obj)


def parse_spec(spec: str) -> tuple[str, str | None]:
    """``"mg2:longdoc"`` -> ``("mg2", "longdoc")``; ``"mkg"`` -> ``("mkg", None)``."""
    name, _, preset = spec.partition(":")
    return name.strip(), (preset.strip() or None)


def get_strategy(spec: str | None = None, preset: str | None = None, **overrides: Any) -> Strategy:
    """A strategy instance from ``name[:preset]`` and parameter overrides; unknown names list the valid ones."""
    name, from_spec = parse_spec(spec or DEFAULT_STRATEGY)
    if name not in STRATEGIES:
        _load_plugins()
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}; choose one of {sorted(STRATEGIES)} (mmkg strategies lists them)")
    cls = STRATEGIES[name]
    if from_spec and preset and from_spec != preset:
        raise ValueError(f"two presets given for {name}: {from_spec!r} and {preset!r}")
    chosen = from_spec or preset or cls.default_preset
    if chosen not in cls.presets:
        raise ValueError(f"unknown preset {chosen!r} for strategy {name}; choose one of {sorted(cls.presets)}")
    params: Params = cls.presets[chosen]
    if overrides:
        params = params.override(**overrides)
    return cls(params, preset=chosen)


def refused_from_clients(spec: str | None, changes: dict[str, Any]) -> list[str]:
    """Parameter overrides a client over HTTP may not send for this strategy (``Params.refused_from_clients``).

    An unknown strategy refuses nothing here: ``get_strategy`` reports it, with the known names.
    """
    name, _ = parse_spec(spec or DEFAULT_STRATEGY)
    if name not in STRATEGIES:
        _load_plugins()  # a plugin's server-only parameters are refused from its first request on
    cls = STRATEGIES.get(name)
    if cls is None or not changes:
        return []
    return type(cls.presets[cls.default_preset]).refused_from_clients(changes)


def describe() -> list[dict[str, Any]]:
    """Every strategy with its summary, modalities, presets and parameters: ``default`` is the default preset's
    value, ``presets`` each preset's. ``routes`` names, for a preset that picks another per query (mg2's
    ``auto``), the presets it picks among: its own values stand for the first one only."""
    out = []
    for name, cls in STRATEGIES.items():
        default = cls.presets[cls.default_preset]
        server = {f.name: f.metadata["server"] for f in fields(default) if "server" in f.metadata}
        values = {p: {f.name: getattr(preset, f.name) for f in fields(preset)} for p, preset in cls.presets.items()}
        out.append(
            {
                "name": name,
                "summary": cls.summary,
                "modalities": sorted(cls.modalities),
                "presets": list(cls.presets),
                "default_preset": cls.default_preset,
                "routes": {p: list(r) for p, r in getattr(cls, "routes", {}).items()},
                "params": [
                    {"name": n, "type": t, "default": d, "doc": doc, "server": server.get(n),
                     "presets": {p: values[p].get(n) for p in cls.presets}}
                    for n, t, d, doc in type(default).describe(default)
                ],
            }
        )
    return out
