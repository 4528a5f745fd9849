from __future__ import annotations

import io
import shutil
from pathlib import Path

import matplotlib
import pytest
from PIL import Image

matplotlib.use("Agg")

PROJECT = Path(__file__).resolve().parent.parent
SAMPLE_CORPUS = PROJECT / "sample_corpus"
MPL_SAMPLE = Path(matplotlib.get_data_path()) / "sample_data"
SHARED = PROJECT.parent / "shared"


@pytest.fixture(scope="session")
def photo_path() -> Path:
    """A real photograph shipped with matplotlib (Grace Hopper, U.S. Navy, public domain)."""
    return MPL_SAMPLE / "grace_hopper.jpg"


@pytest.fixture(scope="session")
def photo(photo_path: Path) -> Image.Image:
    return Image.open(photo_path).convert("RGB")


def write_pdf(path: Path, pages: list[str], image: Image.Image | None = None) -> Path:
    """A real PDF with a text layer per page (matplotlib's PDF backend) and an optional embedded photo."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    with PdfPages(path, metadata={"CreationDate": None, "Title": "Test document"}) as pdf:
        for i, text in enumerate(pages):
            fig = plt.figure(figsize=(6, 8))
            fig.text(0.08, 0.92, text, wrap=True, fontsize=11, va="top")
            if image is not None and i == 0:
                ax = fig.add_axes((0.2, 0.1, 0.6, 0.45))
                ax.imshow(image)
                ax.axis("off")
            pdf.savefig(fig)
            plt.close(fig)
    return path


@pytest.fixture
def jpeg_bytes(photo: Image.Image) -> bytes:
    buf = io.BytesIO()
    photo.save(buf, format="JPEG", quality=85)
    return buf.getvalue()


@pytest.fixture
def sample_corpus(tmp_path: Path) -> Path:
    """A private copy of the bundled sample corpus."""
    dst = tmp_path / "corpus"
    shutil.copytree(SAMPLE_CORPUS, dst)
    return dst
