"""A grounding backend: regions of one strong colour, matched to colour names in the text (``docs/extending.md``).

A picture's entities come from the text around it; this backend grounds those that name a colour
("the red door", "Blue Line") to the pixels of that colour: the box around them, with σ the share of the
picture they cover, scaled up to 1 at a quarter of it. It shows what a grounder receives (``GroundingTask``:
the stored picture and its entities) and returns (a ``GroundingOutcome`` per task, in order; a picture that
cannot be read is reported in ``error``, never raised).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from mmkg.vision.base import Detection, Grounder, GroundingOutcome, GroundingTask
from mmkg.vision.grounders import GROUNDERS

#: colour name -> RGB; a pixel is the colour whose RGB it is nearest, when nearer than ``max_distance``
COLOURS = {"red": (220, 30, 30), "green": (30, 160, 60), "blue": (30, 60, 200), "yellow": (240, 210, 30),
           "orange": (240, 130, 20), "purple": (130, 50, 160), "black": (10, 10, 10)}  # fmt: skip


class ColourGrounder:
    name = "colour"

    def __init__(self, max_distance: float = 80.0, min_share: float = 0.002):
        self.max_distance = max_distance
        self.min_share = min_share

    def ground(self, tasks: Sequence[GroundingTask], tau: float) -> Iterator[GroundingOutcome]:
        for task in tasks:
            wanted = {c: [e for e in task.entities if c in e.name.lower().split()] for c in COLOURS}
            wanted = {c: es for c, es in wanted.items() if es}
            if not wanted:
                yield GroundingOutcome(task.image_id, [])
                continue
            try:
                rgb = np.asarray(Image.open(task.path).convert("RGB"), dtype=np.float32)
            except OSError as exc:
                yield GroundingOutcome(task.image_id, [], error=f"cannot read {task.path.name}: {exc}")
                continue
            names = list(COLOURS)
            dist = np.stack([np.linalg.norm(rgb - np.array(COLOURS[c], np.float32), axis=2) for c in names])
            nearest, best = dist.argmin(axis=0), dist.min(axis=0)
            found = []
            for colour, entities in wanted.items():
                mask = (nearest == names.index(colour)) & (best < self.max_distance)
                share = float(mask.mean())
                score = min(1.0, share * 4)
                if share < self.min_share or score <= tau:
                    continue
                ys, xs = np.nonzero(mask)
                box = (float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1))
                found += [Detection(task.image_id, e.key, e.name, self.name, colour, box, score) for e in entities]
            yield GroundingOutcome(task.image_id, found)


@GROUNDERS.register("colour", help="regions of a named colour (numpy), for entities that name one")
def colour_grounder(options: Mapping[str, Any], data_root: Path) -> Grounder:
    return ColourGrounder(max_distance=float(options.get("max_distance", 80.0)))
