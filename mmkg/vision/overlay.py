"""Pictures of what grounding found: boxes, mask outlines and entity labels over the image.

These are for people: a data engineer looks at a handful per partition in the Dagster UI to see
at a glance whether the grounding makes sense.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

COLORS = {"ocr": (255, 140, 0), "ultralytics": (0, 200, 255)}


def draw_overlay(image_path: Path, objects: list[dict], max_side: int = 800) -> Image.Image:
    """The image (downscaled to ``max_side``) with each object's box, mask outline and label."""
    with Image.open(image_path) as src:
        img = src.convert("RGB")
    scale = min(1.0, max_side / max(img.size))
    if scale < 1.0:
        img = img.resize((round(img.width * scale), round(img.height * scale)), Image.Resampling.LANCZOS)
    layer = Image.new("RGBA", img.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    font = ImageFont.load_default(size=max(12, img.width // 50))
    for obj in objects:
        color = COLORS.get(obj["backend"], (255, 0, 255))
        for poly in obj.get("polygons") or []:
            pts = [(poly[i] * scale, poly[i + 1] * scale) for i in range(0, len(poly) - 1, 2)]
            if len(pts) >= 3:
                draw.polygon(pts, fill=(*color, 60), outline=(*color, 255))
        box = [obj["x0"] * scale, obj["y0"] * scale, obj["x1"] * scale, obj["y1"] * scale]
        draw.rectangle(box, outline=(*color, 255), width=max(2, img.width // 300))
        text = f"{obj['entity_name']} {obj['score']:.2f} ({obj['backend']})"
        tx, ty = box[0], max(0, box[1] - font.size - 4)
        bbox = draw.textbbox((tx, ty), text, font=font)
        draw.rectangle((bbox[0] - 2, bbox[1] - 2, bbox[2] + 2, bbox[3] + 2), fill=(*color, 220))
        draw.text((tx, ty), text, fill=(0, 0, 0, 255), font=font)
    return Image.alpha_composite(img.convert("RGBA"), layer).convert("RGB")


def to_data_uri(img: Image.Image, max_side: int = 480) -> str:
    """A small JPEG data URI, for inline display in Dagster markdown metadata."""
    thumb = img.copy()
    thumb.thumbnail((max_side, max_side))
    buf = io.BytesIO()
    thumb.save(buf, format="JPEG", quality=80)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()
