"""Checksums of every file a published version reads, a cheap size check on open, and a full verify.

At publish, the manifest records ``[size, blake2b]`` for each file of the version folder and for the
files of the LanceDB tables it pins (data, deletion, index and version files; ``_latest.manifest`` and
``latest_version_hint.json``, which LanceDB rewrites, are left out). Lance files are immutable once
written, so a file the previous version already recorded with the same size keeps its recorded digest
instead of being read again:
the cost of a publish grows with what changed, and damage to an old file is never re-blessed.

``open_version`` (what ``Index.open`` and ``describe`` do first) runs ``sizes_wrong``, which stats the files:
a missing or truncated one is an error that names it. ``verify`` (``mmkg index verify``) reads every byte and
names each file whose digest differs: flipped bytes of the same size are caught there. A Lance file that is
missing because LanceDB pruned it on purpose (``mmkg.index.history``: a file of another table version, which
this version never read) is not a problem.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from mmkg.index.history import pruned_files
from mmkg.index.manifest import CURRENT, MANIFEST, Manifest, check_version_name, current_version, list_versions

CHUNK = 1 << 20
SKIP = {"_latest.manifest", "latest_version_hint.json"}  # rewritten by LanceDB on every new table version


def digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with path.open("rb") as fh:
        while block := fh.read(CHUNK):
            h.update(block)
    return h.hexdigest()


def version_files(root: Path, version: str, tables: Iterable[str]) -> list[Path]:
    """The files a version reads: its folder (manifest excepted) and its LanceDB tables' files."""
    folder = root / "versions" / version
    out = [p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST]
    for name in tables:
        lance = root / "lance" / f"{name}.lance"
        out += [p for p in lance.rglob("*") if p.is_file() and p.name not in SKIP]
    return sorted(out)


def file_sums(root: Path, files: Iterable[Path], previous: dict[str, tuple[int, str]] | None = None) -> dict:
    """``{path relative to root: (size, digest)}``, reusing the previous version's digest of an unchanged Lance file."""
    previous = previous or {}
    out: dict[str, tuple[int, str]] = {}
    for path in files:
        rel = path.relative_to(root).as_posix()
        size = path.stat().st_size
        old = previous.get(rel)
        if old is not None and rel.startswith("lance/") and int(old[0]) == size:
            out[rel] = (size, str(old[1]))
        else:
            out[rel] = (size, digest(path))
    return out


def _way_out(root: Path, version: str) -> str:
    return (f"point CURRENT at another version with `mmkg index rollback VERSION --index {root}` "
            f"(`mmkg index versions` lists them), or publish again")  # fmt: skip


def _size_problem(path: Path, size: int) -> str | None:
    if not path.exists():
        return f"{path} is missing"
    if path.stat().st_size != int(size):
        return f"{path} has {path.stat().st_size:,} bytes, {int(size):,} when published"
    return None


def _problems(root: Path, manifest: Manifest, read: bool) -> list[str]:
    pruned: set[str] | None = None
    problems = []
    for rel, (size, want) in manifest.files.items():
        path = root / rel
        problem = _size_problem(path, size)
        if problem is not None and rel.startswith("lance/") and not path.exists():
            pruned = pruned_files(root) if pruned is None else pruned
            if rel in pruned:  # another table version's file that LanceDB pruned; this version never read it
                continue
        if problem is None and read and digest(path) != want:
            problem = f"{path} is damaged: its bytes differ from what was published (same size)"
        if problem is not None:
            problems.append(problem)
    return problems


def sizes_wrong(root: Path, manifest: Manifest) -> list[str]:
    """Files of the version that are missing or have another size than recorded (cheap: no reading)."""
    return _problems(root, manifest, read=False)


def verify(root: Path, manifest: Manifest) -> list[str]:
    """Every file of the version read and compared with its recorded digest; what differs, one line per file."""
    if not manifest.files:
        return [f"version {manifest.version} was published without checksums (an older mmkg): publish again"]
    return _problems(root, manifest, read=True)


def damaged_message(root: Path, version: str, problems: list[str]) -> str:
    return f"index version {version} at {root} is damaged: " + "; ".join(problems[:5]) + (
        f" (+{len(problems) - 5} more)" if len(problems) > 5 else "") + f". {_way_out(root, version)}"  # fmt: skip


class IndexDamaged(ValueError):
    """A version's files differ from what was published; the message names them and the way out."""


def explain(root: Path, manifest: Manifest, exc: BaseException, reading: str = "opening it") -> BaseException:
    """What to raise when reading a version failed: the damaged files, found by ``verify``, or ``exc`` itself.

    A reader checks only sizes on open, so bytes flipped in place surface as a parse error of some
    library (``BadZipFile``, an Arrow or LanceDB error) that names no file. Reading every file again
    turns that into one line naming the damaged ones; when every file matches its digest the failure
    is not damage, and the original error stands.
    """
    problems = verify(root, manifest) if manifest.files else []
    if not problems:
        return exc
    detail = " ".join(f"{exc.__class__.__name__}: {exc}".split())[:200]
    return IndexDamaged(damaged_message(root, manifest.version, problems) + f" ({reading} failed with {detail})")


def open_version(root: Path, version: str | None = None, check_sizes: bool = True) -> tuple[str, Manifest]:
    """The version's name (the current one by default) and manifest, after the cheap size check.

    What every reader does first (``Index.open``, ``describe``): a bad name, a missing version or a
    missing or truncated file is an error naming it, with the way out (``mmkg index verify`` reads
    every byte).
    """
    name = check_version_name(version, "the version asked for") if version else current_version(root)
    folder = root / "versions" / name
    if not folder.exists():
        named = "" if version else f" ({root / CURRENT} names it)"
        raise FileNotFoundError(
            f"index version {name} not found under {root / 'versions'}{named}; "
            f"published: {list_versions(root) or 'none'}; "
            "point CURRENT at one with `mmkg index rollback VERSION`, or publish again"
        )
    manifest = Manifest.read(folder)
    if check_sizes and (problems := sizes_wrong(root, manifest)):
        raise IndexDamaged(damaged_message(root, name, problems))
    return name, manifest


def describe(root: Path, version: str | None = None) -> dict:
    """Version, creation time, encoder, partitions, counts, ANN-indexed tables and size on disk, from the manifest
    alone.

    What ``mmkg index info`` prints: no vector, graph or model is read, so it answers in well under a
    second however large the index. The files the manifest lists get the same cheap size check as
    ``Index.open`` (a missing or truncated file is a ``ValueError`` with the way out).
    """
    root = Path(root)
    name, manifest = open_version(root, version)
    return {
        "root": str(root),
        "version": name,
        "created_at": manifest.created_at,
        "versions": list_versions(root),
        "encoder": manifest.encoder.id,
        "partitions": sorted(manifest.partitions),
        "counts": manifest.counts,
        # searched through their IVF index (re-ranked exactly), with B-trees on id and doc_id from this mmkg on
        "ann_indexed": list(manifest.ann_indexed),
        "size_bytes": sum(p.stat().st_size for p in root.rglob("*") if p.is_file()),
    }
