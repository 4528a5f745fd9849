"""Data derived from one open index version, built once and kept exactly as long as the ``Index`` object.

The layers above keep their lookups, maps and views of a pinned version here, ``derived(index, name, make)``,
instead of caches of their own: one lifetime (a version that is closed and dropped frees what was derived from
it; a server that swaps in a new version builds afresh), and one lock per index, so two requests of a server
never build the same thing twice. ``make`` may itself ask for other derived data of the same index.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_DATA: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
_LOCKS: weakref.WeakKeyDictionary[Any, threading.RLock] = weakref.WeakKeyDictionary()
_GUARD = threading.Lock()


def derived(index: Any, name: str, make: Callable[[], T]) -> T:
    """``make()`` once per ``index`` and ``name`` (names are dotted by their module: ``"evidence.lookups"``)."""
    with _GUARD:
        data = _DATA.get(index)
        if data is None:
            data = _DATA[index] = {}
            _LOCKS[index] = threading.RLock()
        lock = _LOCKS[index]
    if name in data:
        return data[name]
    with lock:
        if name not in data:
            data[name] = make()
        return data[name]


def forget(index: Any) -> None:
    """Drop everything derived from ``index`` (tests; an index whose files were replaced in place)."""
    with _GUARD:
        _DATA.pop(index, None)
        _LOCKS.pop(index, None)
