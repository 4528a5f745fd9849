"""Regenerate the bundled sample corpus in ``sample_corpus/``.

Every image comes from a file that ships inside an installed package (scikit-image, Matplotlib), so
nothing is downloaded. Only public-domain, CC0 or "no known copyright restrictions" images are used.
The script writes three partitions of Markdown, JSONL, PDF and JPEG files plus a README, then checks
the result (sizes, links, PDF text and image layers). Output is deterministic for a fixed set of
package versions, so re-running it leaves the files byte-identical.

Usage::

    python scripts/make_sample_corpus.py [--out sample_corpus]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import io
import json
import re
import shutil
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.figure import Figure
from PIL import Image, ImageDraw, ImageFont

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "sample_corpus"
PARTITIONS = ("computing_history", "nature_and_objects", "space")
MAX_SIDE = 640
JPEG_QUALITY = 85
MAX_IMAGE_BYTES = 150_000
MAX_PDF_BYTES = 300_000
MAX_TOTAL_BYTES = 2_000_000
MIN_WORDS, MAX_WORDS = 150, 400
PDF_PHOTO_SIDE = 230


def package_dir(dist: str, module: str) -> Path:
    """Folder of an installed package, located without importing heavy submodules."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"package {dist!r} ({module}) is not installed; install the dev extras first")
    return Path(next(iter(spec.submodule_search_locations)))


SKIMAGE_DATA = package_dir("scikit-image", "skimage") / "data"
MPL_DATA = Path(matplotlib.get_data_path())
BOLD_FONT = MPL_DATA / "fonts" / "ttf" / "DejaVuSans-Bold.ttf"
REGULAR_FONT = MPL_DATA / "fonts" / "ttf" / "DejaVuSans.ttf"


@dataclass(frozen=True)
class ImageSpec:
    """One corpus image: where it comes from and who made it."""

    dest: str  # path inside the corpus
    dist: str  # distribution that ships the source file
    source: Path  # absolute path of the source file
    author: str
    licence: str
    origin: str  # where the package authors got it
    note: str = ""  # what was done to it besides resizing


def _sk(name: str) -> Path:
    return SKIMAGE_DATA / name


IMAGES: tuple[ImageSpec, ...] = (
    ImageSpec(
        "space/images/astronaut.jpg",
        "scikit-image",
        _sk("astronaut.png"),
        "NASA (portrait of astronaut Eileen Collins)",
        "Public domain (NASA)",
        "NASA Great Images database, https://flic.kr/p/r9qvLn",
    ),
    ImageSpec(
        "space/images/hubble_deep_field.jpg",
        "scikit-image",
        _sk("hubble_deep_field.jpg"),
        "NASA and ESA (Hubble eXtreme Deep Field, 2012)",
        "Public domain (NASA)",
        "HubbleSite news release 2012-37, http://hubblesite.org/newscenter/archive/releases/2012/37/image/a/",
    ),
    ImageSpec(
        "space/images/hubble_placard.jpg",
        "scikit-image",
        _sk("hubble_deep_field.jpg"),
        "NASA and ESA; placard text added by this script",
        "Public domain (NASA); added text CC0",
        "same source as hubble_deep_field.jpg",
        "photo scaled onto a grey 'museum wall' with a white placard drawn in DejaVu Sans Bold (Matplotlib font)",
    ),
    ImageSpec(
        "space/images/falcon9_dscovr.jpg",
        "scikit-image",
        _sk("rocket.jpg"),
        "SpaceX (Falcon 9 with DSCOVR on Launch Complex 40, 2015)",
        "Public domain (released by SpaceX, 2015)",
        "SpaceX Photos on Flickr, https://www.flickr.com/photos/spacexphotos/16511594820/",
    ),
    ImageSpec(
        "computing_history/images/grace_hopper.jpg",
        "matplotlib",
        MPL_DATA / "sample_data" / "grace_hopper.jpg",
        "U.S. Navy official portrait of Grace Hopper (1984)",
        "Public domain (work of the U.S. federal government)",
        "Matplotlib sample data, added in matplotlib PR #1599 as a public-domain image (believed to be the Naval "
        "History and Heritage Command portrait of Commodore Grace M. Hopper, 1984)",
    ),
    ImageSpec(
        "computing_history/images/cameraman.jpg",
        "scikit-image",
        _sk("camera.png"),
        "Lav Varshney (photograph of Kush Varshney, February 2006)",
        "CC0 1.0",
        "scikit-image PR #4913 / issue #3927 (replacement for the old 'cameraman' image)",
    ),
    ImageSpec(
        "nature_and_objects/images/chelsea.jpg",
        "scikit-image",
        _sk("chelsea.png"),
        "Stéfan van der Walt",
        "CC0 1.0",
        "scikit-image sample data (data.chelsea)",
    ),
    ImageSpec(
        "nature_and_objects/images/espresso.jpg",
        "scikit-image",
        _sk("coffee.png"),
        "Rachel Michetti, courtesy of Pikolo Espresso Bar",
        "CC0 1.0",
        "scikit-image sample data (data.coffee)",
    ),
    ImageSpec(
        "nature_and_objects/images/retina.jpg",
        "scikit-image",
        _sk("retina.jpg"),
        "Mikael Häggström",
        "CC0 1.0",
        "Wikimedia Commons, https://commons.wikimedia.org/wiki/File:Fundus_photograph_of_normal_left_eye.jpg",
    ),
    ImageSpec(
        "nature_and_objects/images/clock.jpg",
        "scikit-image",
        _sk("clock_motion.png"),
        "Stéfan van der Walt",
        "Public domain (released by the photographer)",
        "scikit-image sample data (data.clock)",
    ),
    ImageSpec(
        "nature_and_objects/images/horse.jpg",
        "scikit-image",
        _sk("horse.png"),
        "Andreas Preuss (marauder)",
        "CC0 1.0",
        "Openclipart, http://openclipart.org/detail/158377/horse-by-marauder",
        "transparent background flattened onto white",
    ),
    ImageSpec(
        "nature_and_objects/images/pompeii_coins.jpg",
        "scikit-image",
        _sk("coins.png"),
        "Brooklyn Museum (Greek coins from Pompeii)",
        "No known copyright restrictions",
        "Brooklyn Museum Open Collection, https://www.brooklynmuseum.org/opencollection/archives/image/51611",
        "standalone image: no document in the corpus links to it",
    ),
)

# --------------------------------------------------------------------------------------------------
# Documents. Facts are well-known encyclopedic ones; sentences are kept simple (subject, verb, object)
# so that a dependency-rule relation extractor can use them.
# --------------------------------------------------------------------------------------------------

MARKDOWN: dict[str, str] = {
    "space/eileen_collins.md": """
# Eileen Collins, Space Shuttle Pilot and Commander

![Eileen Collins in an orange pressure suit, with an American flag and a Space Shuttle model](images/astronaut.jpg)

Eileen Collins is a retired American astronaut and a retired colonel of the United States Air Force.
Eileen Collins was born in Elmira, New York, on November 19, 1956. She graduated from Syracuse
University in 1978 with a degree in mathematics and economics. She later earned a master's degree in
operations research from Stanford University.

Collins completed pilot training at Vance Air Force Base in Oklahoma in 1979. She taught mathematics at
the United States Air Force Academy in Colorado, and she graduated from the Air Force Test Pilot School
at Edwards Air Force Base in California in 1990. NASA selected Eileen Collins as an astronaut in 1990.

In February 1995 Eileen Collins became the first woman to pilot a Space Shuttle. Her first mission,
STS-63, flew aboard the orbiter Discovery and made a rendezvous with the Russian space station Mir.
Collins piloted the Space Shuttle Atlantis on STS-84 in 1997, a mission that docked with Mir. In July
1999 Collins became the first woman to command a Space Shuttle mission. On that flight, STS-93, the
orbiter Columbia deployed the Chandra X-ray Observatory. In 2005 she commanded STS-114, the Return to
Flight mission of Discovery that followed the loss of Columbia in 2003.

Eileen Collins retired from NASA in 2006. Over four spaceflights she spent 38 days, 8 hours and 10
minutes in space.

The photograph shows Eileen Collins smiling in an orange pressure suit decorated with mission patches.
An American flag hangs behind her on the left, a dark helmet rests in the lower right corner, and
a model of the Space Shuttle stands in the background. NASA released the portrait into the public
domain.
""",
    "space/hubble_space_telescope.md": """
# The Hubble Space Telescope and the eXtreme Deep Field

The Hubble Space Telescope is a space telescope in low Earth orbit. The Hubble Space Telescope was
launched by NASA in 1990. The Space Shuttle Discovery carried the telescope into orbit on mission
STS-31, which lifted off from the Kennedy Space Center in Florida on April 24, 1990. The telescope is
named after the astronomer Edwin Hubble. Edwin Hubble worked at the Mount Wilson Observatory in
California.

Hubble is a joint project of NASA and the European Space Agency. The Space Telescope Science Institute
in Baltimore, Maryland, runs the science operations of the telescope, and the Goddard Space Flight
Center in Greenbelt, Maryland, manages the spacecraft for NASA. The primary mirror of Hubble is 2.4
metres wide. Soon after launch, astronomers found that the mirror had been ground to the wrong shape.
Astronauts on the Space Shuttle Endeavour corrected the flaw during the first servicing mission,
STS-61, in December 1993. Astronauts serviced the telescope five times, and the last servicing mission,
STS-125, flew in 2009.

![The Hubble eXtreme Deep Field: thousands of distant galaxies on a black sky](images/hubble_deep_field.jpg)

NASA released the Hubble eXtreme Deep Field, also called the XDF, in September 2012. The XDF combines
about ten years of Hubble observations of a tiny patch of sky in the constellation Fornax. The image
contains about 5,500 galaxies, and the light from some of them set out more than 13 billion years ago.
The picture above is a reduced copy of the XDF: galaxies of many colours and shapes are scattered across
a black background, and hardly any foreground stars are visible.

![A museum-style placard reading HUBBLE SPACE TELESCOPE below the eXtreme Deep Field](images/hubble_placard.jpg)

The second picture shows the same deep field hung on a grey wall above a white museum-style placard.
The placard reads "HUBBLE SPACE TELESCOPE" in large capital letters. Two smaller lines below it read
"eXtreme Deep Field, 2012" and "Credit: NASA and ESA".
""",
    "space/dscovr_launch.md": """
# Falcon 9 and the Launch of DSCOVR

![A SpaceX Falcon 9 rocket on its launch pad at twilight, surrounded by lightning towers](images/falcon9_dscovr.jpg)

SpaceX is an American spacecraft manufacturer and launch company. Elon Musk founded SpaceX in 2002.
SpaceX builds the Falcon 9 rocket, a two-stage launch vehicle that first flew in June 2010. Both stages
of Falcon 9 burn liquid oxygen and rocket-grade kerosene.

On February 11, 2015, a Falcon 9 rocket launched the Deep Space Climate Observatory, known as DSCOVR,
from Space Launch Complex 40 at Cape Canaveral Air Force Station in Florida. The launch site lies next
to the Kennedy Space Center. NASA operates the Kennedy Space Center on Merritt Island, Florida. The
air force station was renamed Cape Canaveral Space Force Station in December 2020.

DSCOVR is a joint mission of the National Oceanic and Atmospheric Administration (NOAA), NASA and the
United States Air Force. The spacecraft travelled to the Sun-Earth L1 Lagrange point, about 1.5 million
kilometres from Earth. From there DSCOVR measures the solar wind and gives early warning of
geomagnetic storms to the NOAA Space Weather Prediction Center in Boulder, Colorado. Its Earth
Polychromatic Imaging Camera, called EPIC, photographs the whole sunlit side of the Earth. The mission
began as Triana, an Earth-observing satellite that Vice President Al Gore proposed in 1998.

The photograph shows the white Falcon 9 standing upright on the pad against a deep blue twilight sky.
Tall lightning protection towers surround the rocket, and bright floodlights shine along the ground at
the base of the pad. SpaceX took the picture, and SpaceX released it into the public domain in 2015
together with the rest of its photo library.
""",
    "computing_history/grace_hopper.md": """
# Grace Hopper, Computer Pioneer

![Official U.S. Navy portrait of Grace Hopper in uniform](images/grace_hopper.jpg)

Grace Hopper was an American computer scientist, mathematician and United States Navy rear admiral.
Grace Hopper was born in New York City on December 9, 1906. She graduated from Vassar College in 1928,
and she earned a PhD in mathematics from Yale University in 1934. Grace Hopper taught mathematics at
Vassar College before the Second World War.

In 1943 Hopper joined the United States Navy Reserve. The Navy assigned her to the Bureau of Ships
Computation Project at Harvard University. Grace Hopper worked at Harvard University on the Harvard
Mark I computer with Howard Aiken. In 1949 she joined the Eckert-Mauchly Computer Corporation in
Philadelphia, which built the UNIVAC I. Remington Rand acquired the company in 1950.

Hopper believed that programs should be written in words rather than in machine code. Her team created
the A-0 System in 1952, one of the first compilers, and later the FLOW-MATIC language. FLOW-MATIC
strongly influenced COBOL, the business programming language that a committee designed in 1959.

Hopper retired from the Navy and was recalled to active duty more than once. When she finally retired
in 1986 at the age of 79, she was the oldest serving officer in the United States Navy. She then worked
as a senior consultant for Digital Equipment Corporation. Grace Hopper died in Arlington, Virginia, on
January 1, 1992. She is buried at Arlington National Cemetery.

Many honours carry her name. The Navy named the destroyer USS Hopper after her. Yale University renamed
one of its residential colleges Grace Hopper College in 2017. President Barack Obama awarded her the
Presidential Medal of Freedom in 2016.

The portrait shows Grace Hopper in a dark Navy uniform and an officer's cap, with rows of ribbons on
her jacket. She wears glasses and stands in front of flags. The official U.S. Navy photograph dates
from 1984 and is in the public domain.
""",
    "computing_history/first_computer_bug.md": """
# The First Computer Bug

![Grace Hopper, who often told the story of the moth in the Harvard Mark II](images/grace_hopper.jpg)

The Harvard Mark II was an electromechanical computer that Howard Aiken built at Harvard University
for the United States Navy. The machine used thousands of electromechanical relays, small switches that
a magnet opens and closes.

On September 9, 1947, the operators of the Harvard Mark II found a moth trapped in Relay 70 of Panel F.
They removed the insect and taped it into the logbook of the machine. Next to the moth they wrote the
note "First actual case of bug being found." The entry was made at 3:45 in the afternoon.

Engineers had called small faults "bugs" long before 1947. Thomas Edison used the word in his letters
in 1878. The joke in the logbook was that this time the bug was a real insect.

Grace Hopper was a member of the Harvard Computation Laboratory team at the time, but she did not find
the moth herself. Grace Hopper worked at Harvard University from 1944 to 1949. She loved to tell the
story of the moth in her lectures, and her retelling made it one of the best-known stories in the
history of computing.

The Smithsonian Institution now holds the logbook page with the moth. The page belongs to the National
Museum of American History in Washington, D.C.

The portrait that accompanies this article shows Grace Hopper decades later, in 1984. She wears the
uniform and cap of a United States Navy officer and stands in front of flags.
""",
    "computing_history/test_images.md": """
# Grace Hopper and the Cameraman: Free Test Images for Image Processing

Image-processing libraries ship small test images, so that their examples and unit tests run without
downloads. For many years the best-known test image was "Lenna", a scanned magazine photograph. Critics
objected to the Lenna image on grounds of both taste and copyright.

The Matplotlib project replaced Lenna in its examples with public-domain portraits of Ada Lovelace and
Grace Hopper in 2012. Matplotlib removed the Lenna files from its sample data in 2015. The Pillow
imaging library switched to a Grace Hopper portrait in 2014. The portrait below is the grace_hopper.jpg
file that ships with Matplotlib. It is a United States Navy photograph, so it is in the public domain.

![Grace Hopper portrait from the Matplotlib sample data](images/grace_hopper.jpg)

The scikit-image library had a similar problem with "cameraman", a grayscale photograph of a man behind
a camera on a tripod. Nobody could establish who held the rights to the original picture. In
scikit-image version 0.18, released in 2020, the developers replaced it with a new photograph. Lav
Varshney took the new photograph in February 2006 and dedicated it to the public domain under the CC0
licence. The imageio and PyWavelets projects adopted the same replacement image.

![Kush Varshney looking through a camera on a tripod, the scikit-image camera test image](images/cameraman.jpg)

The new camera image shows Kush Varshney in a long dark coat, bending to look through a camera that
stands on a tripod. He stands on a wide lawn, and buildings rise on the horizon behind him. Kush
Varshney is a computer scientist at IBM Research. Lav Varshney is an electrical engineer who studied at
the Massachusetts Institute of Technology.

Stéfan van der Walt founded scikit-image in 2009. The library now includes the camera image as
skimage.data.camera, while Matplotlib provides the Grace Hopper portrait through its get_sample_data
function.
""",
    "nature_and_objects/chelsea_the_cat.md": """
# Chelsea the Cat

![Close-up of Chelsea, a brown tabby cat with yellow-green eyes](images/chelsea.jpg)

Chelsea is a tabby cat whose portrait is one of the standard sample images of the scikit-image
library, where it is available as data.chelsea and data.cat. Stéfan van der Walt photographed Chelsea
and dedicated the picture to the public domain under the CC0 licence. Stéfan van der Walt founded the
scikit-image project. He works at the University of California, Berkeley, and he is also a core
developer of NumPy.

The photograph is a close-up of the cat's face. Chelsea has a striped brown coat with a white chin,
large yellow-green eyes with dark pupils, a pink nose and long white whiskers. The background is soft
and out of focus. Image-processing tutorials use the picture because it has strong edges in horizontal
and diagonal directions and textures at several scales.

The domestic cat, Felis catus, is a small carnivorous mammal of the family Felidae. Cats were probably
domesticated in the Near East from the African wildcat, Felis lybica. A burial site at Shillourokambos
on the island of Cyprus, about 9,500 years old, held a cat buried together with a human. Ancient
Egyptians kept cats and honoured the goddess Bastet, who was often shown with the head of a cat.

A tabby coat has stripes, swirls or spots, and most tabby cats have a dark mark shaped like the letter
"M" on the forehead. Cats see well in dim light because a reflective layer behind the retina, the
tapetum lucidum, sends light back through the eye.
""",
    "nature_and_objects/espresso.md": """
# An Espresso at Pikolo Espresso Bar

![A cup of espresso on a red saucer with a spoon, on a wooden table](images/espresso.jpg)

The photograph shows a cup of espresso on a wooden table. The cup is red on the outside and white on
the inside. It sits on a matching red saucer, and a small metal spoon rests on the saucer. A layer of
golden-brown crema covers the coffee. Rachel Michetti took the photograph at Pikolo Espresso Bar and
released it under the CC0 licence. The picture ships with scikit-image as data.coffee. Image-processing
examples use it because it contains elliptical shapes and textures that range from smooth porcelain to
coarse wood grain.

Espresso is a concentrated coffee drink. A barista makes espresso by forcing hot water under high
pressure, usually about 9 bar, through finely ground coffee. A single shot takes roughly 25 to 30
seconds to brew. The crema is a foam of coffee oils, proteins and carbon dioxide.

Espresso comes from Italy. Angelo Moriondo of Turin patented an early steam-driven coffee machine in
1884. Luigi Bezzera of Milan patented an improved espresso machine in 1901. Desiderio Pavoni bought
the Bezzera patent in 1903 and founded the company La Pavoni in Milan. After the Second World War
Achille Gaggia introduced a lever-operated piston machine, which produced the thick crema of modern
espresso.

Coffee plants belong to the genus Coffea. The species Coffea arabica originated in the highlands of
Ethiopia. Brazil is the largest coffee producer in the world.
""",
    "nature_and_objects/human_retina.md": """
# Photographing the Human Retina

![Fundus photograph of a normal human left eye, with the optic disc and retinal blood vessels](images/retina.jpg)

The picture is a fundus photograph of a normal left eye. It shows the retina, the light-sensitive layer
at the back of the eye, as it appears through the pupil. Mikael Häggström, a Swedish physician,
published the photograph on Wikimedia Commons and dedicated it to the public domain under the CC0
licence. The scikit-image library ships the picture as data.retina.

In the image the bright yellowish circle on the left is the optic disc. The optic nerve leaves the eye
at the optic disc, and the retinal blood vessels enter there. The optic disc has no photoreceptors, so
it forms the blind spot. The central retinal artery and the central retinal vein branch out from the
optic disc across the orange-red background. The darker area near the centre of the picture is the
macula, and the fovea at the centre of the macula gives the sharpest vision.

The retina contains two main kinds of photoreceptor cells. Rod cells work in dim light, and cone cells
detect colour. The optic nerve carries signals from the retina to the brain.

Hermann von Helmholtz invented the ophthalmoscope in 1851. The ophthalmoscope made it possible to look
directly at a living retina. The Swedish ophthalmologist Johan Nordenson and the company Carl Zeiss
introduced the first commercial fundus camera in 1926. Today ophthalmologists use fundus photographs to
screen patients for diabetic retinopathy, glaucoma and macular degeneration.
""",
}

RECORDS: dict[str, list[dict[str, object]]] = {
    "nature_and_objects/image_catalog.jsonl": [
        {
            "id": "clock-motion-blur",
            "title": "Motion-blurred wall clock",
            "text": (
                "Stéfan van der Walt photographed a round wall clock while moving the camera roughly "
                "horizontally, so the clock face is smeared sideways. Tutorials use the picture to demonstrate "
                "inverse filtering and deconvolution, which try to undo motion blur. Stéfan van der Walt "
                "released the photograph into the public domain."
            ),
            "images": ["images/clock.jpg"],
        },
        {
            "id": "horse-silhouette",
            "title": "Horse silhouette",
            "text": (
                "The drawing shows the black silhouette of a standing horse facing right on a white background. "
                "Andreas Preuss published the drawing on Openclipart and dedicated it to the public domain under "
                "CC0. Image-processing tutorials use it to demonstrate skeletonization and convex hulls. A "
                "genetic study published in 2021 traced modern domestic horses to the lower Volga and Don region "
                "of the Eurasian steppe around 2200 BC."
            ),
            "images": ["images/horse.jpg"],
        },
        {
            "id": "van-der-walt-photographs",
            "title": "Two public-domain photographs by Stéfan van der Walt",
            "text": (
                "Stéfan van der Walt, the founder of scikit-image, contributed several of its sample photographs. "
                "The portrait of Chelsea the cat and the motion-blurred wall clock are both his pictures, and "
                "both are free of copyright restrictions."
            ),
            "images": ["images/chelsea.jpg", "images/clock.jpg"],
        },
        {
            "id": "espresso-cup",
            "title": "Espresso cup",
            "text": (
                "Rachel Michetti photographed a red espresso cup on a red saucer at Pikolo Espresso Bar. "
                "The CC0 photograph ships with scikit-image as the coffee sample image."
            ),
            "images": ["images/espresso.jpg"],
        },
    ],
}

PDF_PATH = "computing_history/harvard_mark_i_and_cobol.pdf"
PDF_TITLE = "From the Harvard Mark I to COBOL"
PDF_PAGE1 = [
    "The Harvard Mark I, officially named the IBM Automatic Sequence Controlled Calculator, was one of the "
    "first general-purpose computers built in the United States. Howard Aiken, a graduate student in "
    "physics at Harvard University, proposed the machine in 1937. IBM built the Harvard Mark I at its plant "
    "in Endicott, New York, and the computer began working at Harvard University in 1944.",
    "The Mark I was an electromechanical machine about 16 metres long. It used relays, switches and "
    "rotating shafts, and it read its instructions from punched paper tape. The United States Navy used "
    "the Mark I for wartime calculations.",
    "Grace Hopper joined the Mark I team in 1944 as one of its first programmers. Grace Hopper wrote the "
    "manual for the Harvard Mark I, which Harvard University published in 1946.",
]
PDF_CAPTION = "Grace Hopper in 1984. Official U.S. Navy photograph (public domain)."
PDF_PAGE2_TITLE = "Compilers and COBOL"
PDF_PAGE2 = [
    "In 1949 Grace Hopper joined the Eckert-Mauchly Computer Corporation in Philadelphia. Her team at "
    "Remington Rand wrote the A-0 System in 1952, one of the first compilers. Later the team created "
    "FLOW-MATIC, a language for UNIVAC computers that used English words such as COMPARE and TRANSFER.",
    "In May 1959 the United States Department of Defense hosted a meeting at the Pentagon that created "
    "the Conference on Data Systems Languages, known as CODASYL. A CODASYL committee designed COBOL, the "
    "Common Business-Oriented Language, later in 1959. Jean Sammet of Sylvania Electric Products was a "
    "member of the committee. COBOL drew heavily on FLOW-MATIC and on COMTRAN from IBM, and Grace Hopper "
    "served as a technical adviser to the committee.",
    "In December 1960 the same COBOL program ran on two different computers, an RCA 501 and a Remington "
    "Rand UNIVAC II. Banks, insurance companies and government agencies still run COBOL programs today.",
]


# --------------------------------------------------------------------------------------------------
# Image helpers
# --------------------------------------------------------------------------------------------------


def load_rgb_or_gray(path: Path) -> Image.Image:
    """Open a source image as RGB or L, flattening any alpha channel onto white."""
    with Image.open(path) as im:
        im.load()
        if im.mode in ("RGBA", "LA", "P"):
            rgba = im.convert("RGBA")
            flat = Image.new("RGB", rgba.size, "white")
            flat.paste(rgba, mask=rgba.getchannel("A"))
            return flat
        if im.mode in ("L", "RGB"):
            return im.copy()
        return im.convert("RGB")


def fit(im: Image.Image, max_side: int = MAX_SIDE) -> Image.Image:
    """Downscale so the longest side is at most ``max_side`` (never upscale)."""
    scale = max_side / max(im.size)
    if scale >= 1:
        return im
    size = (max(1, round(im.width * scale)), max(1, round(im.height * scale)))
    return im.resize(size, Image.Resampling.LANCZOS)


def encode_jpeg(im: Image.Image, limit: int = MAX_IMAGE_BYTES) -> bytes:
    """JPEG at quality 85, stepping quality down only if the file would exceed ``limit``."""
    for quality in range(JPEG_QUALITY, 40, -5):
        buf = io.BytesIO()
        im.save(buf, "JPEG", quality=quality, optimize=True)
        if buf.tell() <= limit:
            return buf.getvalue()
    raise ValueError("image cannot be encoded under the size limit")


def _font(path: Path, size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(str(path), size)


def _fitted_font(draw: ImageDraw.ImageDraw, text: str, path: Path, start: int, width: int) -> ImageFont.FreeTypeFont:
    """Largest font size (from ``start`` down) whose rendering of ``text`` fits in ``width`` px."""
    size = start
    while size > 8:
        font = _font(path, size)
        left, _, right, _ = draw.textbbox((0, 0), text, font=font)
        if right - left <= width:
            return font
        size -= 1
    return _font(path, size)


def make_placard(photo: Image.Image) -> Image.Image:
    """Hang ``photo`` on a grey wall above a museum placard with legible printed text."""
    canvas = Image.new("RGB", (MAX_SIDE, MAX_SIDE), (92, 92, 96))
    pic = fit(photo.convert("RGB"), 440)
    x = (MAX_SIDE - pic.width) // 2
    frame = Image.new("RGB", (pic.width + 16, pic.height + 16), (24, 24, 24))
    canvas.paste(frame, (x - 8, 22))
    canvas.paste(pic, (x, 30))
    draw = ImageDraw.Draw(canvas)
    top = 30 + pic.height + 34
    box = (40, top, MAX_SIDE - 40, MAX_SIDE - 24)
    draw.rectangle(box, fill=(246, 244, 238), outline=(40, 40, 40), width=2)
    inner = box[2] - box[0] - 40
    lines = [
        ("HUBBLE SPACE TELESCOPE", _fitted_font(draw, "HUBBLE SPACE TELESCOPE", BOLD_FONT, 40, inner)),
        ("eXtreme Deep Field, 2012", _font(BOLD_FONT, 24)),
        ("Credit: NASA and ESA", _font(REGULAR_FONT, 20)),
    ]
    heights = [draw.textbbox((0, 0), t, font=f)[3] for t, f in lines]
    gap = 12
    y = box[1] + (box[3] - box[1] - sum(heights) - gap * (len(lines) - 1)) // 2
    for (text, font), h in zip(lines, heights, strict=True):
        left, _, right, _ = draw.textbbox((0, 0), text, font=font)
        draw.text(((MAX_SIDE - (right - left)) // 2 - left, y), text, font=font, fill=(20, 20, 20))
        y += h + gap
    return canvas


# Derived images: destination -> transform applied after loading the source.
TRANSFORMS: dict[str, Callable[[Image.Image], Image.Image]] = {
    "space/images/hubble_placard.jpg": make_placard,
}


def write_images(out: Path) -> None:
    """Re-encode every source image into the corpus."""
    for spec in IMAGES:
        if not spec.source.is_file():
            sys.exit(f"missing source image {spec.source} (from {spec.dist})")
        im = load_rgb_or_gray(spec.source)
        im = TRANSFORMS.get(spec.dest, fit)(im)
        dest = out / spec.dest
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(encode_jpeg(im))


# --------------------------------------------------------------------------------------------------
# Text, JSONL and PDF writers
# --------------------------------------------------------------------------------------------------


def unwrap(md: str) -> str:
    """Join the hard-wrapped lines of each paragraph so every paragraph is one line."""
    blocks = [" ".join(line.strip() for line in block.splitlines()) for block in md.strip().split("\n\n")]
    return "\n\n".join(blocks) + "\n"


def write_markdown(out: Path) -> None:
    """Write the Markdown documents."""
    for rel, body in MARKDOWN.items():
        dest = out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(unwrap(body), encoding="utf-8")


def write_records(out: Path) -> None:
    """Write the JSONL files, one record per line."""
    for rel, records in RECORDS.items():
        lines = [json.dumps(r, ensure_ascii=False) for r in records]
        (out / rel).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _paragraphs(fig: Figure, paragraphs: list[str], y: float, width: int = 92, size: float = 11.0) -> float:
    """Draw wrapped paragraphs from height ``y`` (figure fraction) downwards; return the next free y."""
    line_h = size * 1.45 / (11 * 72)  # line height as a fraction of an 11-inch page
    for para in paragraphs:
        for line in textwrap.wrap(para, width):
            fig.text(0.09, y, line, fontsize=size, va="top", ha="left")
            y -= line_h
        y -= line_h * 0.6
    return y


def write_pdf(out: Path) -> None:
    """Two-page PDF with a real text layer; page 1 also holds an embedded raster photo."""
    photo = fit(load_rgb_or_gray(MPL_DATA / "sample_data" / "grace_hopper.jpg").convert("RGB"), PDF_PHOTO_SIDE)
    pixels = np.asarray(photo)
    dest = out / PDF_PATH
    metadata = {
        "Title": PDF_TITLE,
        "Author": "mmkg sample corpus",
        "Subject": "Grace Hopper, the Harvard Mark I and COBOL",
        "CreationDate": None,
        "ModDate": None,
    }
    rc = {"pdf.fonttype": 42, "font.family": "DejaVu Sans", "pdf.compression": 9}
    with matplotlib.rc_context(rc), PdfPages(dest, metadata=metadata) as pdf:
        fig = Figure(figsize=(8.5, 11), dpi=72)
        fig.text(0.09, 0.94, PDF_TITLE, fontsize=20, fontweight="bold", va="top")
        y = _paragraphs(fig, PDF_PAGE1, 0.89)
        # figimage offsets are in pixels; at dpi=72 one pixel is one PDF point.
        img_top = y * 11 * 72 - 10
        yo = int(img_top - photo.height)
        fig.figimage(pixels, xo=int(0.09 * 8.5 * 72), yo=yo, origin="upper")
        fig.text(0.09, (yo - 8) / (11 * 72), PDF_CAPTION, fontsize=9, style="italic", va="top")
        pdf.savefig(fig)

        fig2 = Figure(figsize=(8.5, 11), dpi=72)
        fig2.text(0.09, 0.94, PDF_PAGE2_TITLE, fontsize=20, fontweight="bold", va="top")
        _paragraphs(fig2, PDF_PAGE2, 0.89)
        pdf.savefig(fig2)


# --------------------------------------------------------------------------------------------------
# README and checks
# --------------------------------------------------------------------------------------------------


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def write_readme(out: Path) -> None:
    """Corpus README: every image, its package file, author, licence; how to regenerate."""
    rows = []
    for spec in IMAGES:
        pkg_root = package_dir(spec.dist, "skimage" if spec.dist == "scikit-image" else "matplotlib").parent
        rel_src = spec.source.relative_to(pkg_root).as_posix()
        note = f" {spec.note[0].upper()}{spec.note[1:]}." if spec.note else ""
        rows.append(
            f"| `{spec.dest}` | `{rel_src}` ({spec.dist}) | {spec.author} | {spec.licence} | {spec.origin}.{note} |"
        )
    versions = ", ".join(f"{d} {_version(d)}" for d in ("scikit-image", "matplotlib", "pillow", "numpy"))
    text = f"""# mmkg sample corpus

A small multimodal corpus for trying the pipeline end to end. Each sub-folder is one partition:

- `space/`: Eileen Collins, the Hubble Space Telescope and its eXtreme Deep Field (one copy with a
  printed museum placard, for OCR), and the Falcon 9 launch of DSCOVR. Three Markdown documents.
- `computing_history/`: Grace Hopper, the first computer bug, free test images (Lenna, cameraman),
  plus a two-page PDF (`harvard_mark_i_and_cobol.pdf`, text layer on both pages, an embedded
  photograph on page 1). Three Markdown documents and one PDF.
- `nature_and_objects/`: Chelsea the cat, espresso, the human retina, a JSONL file of short image
  records (`image_catalog.jsonl`), and one standalone image (`images/pompeii_coins.jpg`) that no
  document links to.

This README sits at the corpus root, outside every partition, so the pipeline does not ingest it.

## Images

All images are re-encoded as JPEG (quality {JPEG_QUALITY}, longest side at most {MAX_SIDE} px) from files
that ship inside installed Python packages; nothing is downloaded. Licences are as stated by the
package authors (scikit-image docstrings in `skimage/data/_fetchers.py`; Matplotlib PR #1599 for the
Grace Hopper portrait).

| Corpus file | Package file | Author / source | Licence | Provenance and notes |
|---|---|---|---|---|
{chr(10).join(rows)}

The PDF embeds a copy of the same Grace Hopper portrait (longest side {PDF_PHOTO_SIDE} px). The placard text is drawn
with DejaVu Sans (Bitstream Vera / DejaVu font licence) from Matplotlib's bundled fonts.

## Regenerating

```
python scripts/make_sample_corpus.py
```

The script deletes and rewrites the three partition folders and this README, then checks sizes,
links and the PDF text and image layers. Output is byte-identical across runs for the same package
versions (last generated with {versions}). It needs the dev extras (scikit-image) installed.
"""
    (out / "README.md").write_text(text, encoding="utf-8")


_LINK = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


def check(out: Path) -> None:
    """Verify sizes, word counts, links, standalone image and the PDF layers; exit non-zero on failure."""
    import pypdfium2
    import pypdfium2.raw as pdfium_c

    problems: list[str] = []
    linked: set[Path] = set()
    for rel in MARKDOWN:
        text = (out / rel).read_text(encoding="utf-8")
        if not text.startswith("# "):
            problems.append(f"{rel}: first line is not a '# Title'")
        words = len(_LINK.sub("", text).split())
        if not MIN_WORDS <= words <= MAX_WORDS:
            problems.append(f"{rel}: {words} words, outside {MIN_WORDS}-{MAX_WORDS}")
        for target in _LINK.findall(text):
            linked.add((out / rel).parent.joinpath(target).resolve())
    for rel, records in RECORDS.items():
        for rec in records:
            for target in rec["images"]:  # type: ignore[union-attr]
                linked.add((out / rel).parent.joinpath(str(target)).resolve())
    for path in linked:
        if not path.is_file():
            problems.append(f"broken image link -> {path}")
    images = {(out / s.dest).resolve() for s in IMAGES}
    unlinked = sorted(p.relative_to(out.resolve()).as_posix() for p in images - linked)
    if unlinked != ["nature_and_objects/images/pompeii_coins.jpg"]:
        problems.append(f"unexpected unlinked images: {unlinked}")
    for spec in IMAGES:
        size = (out / spec.dest).stat().st_size
        with Image.open(out / spec.dest) as im:
            side = max(im.size)
        if size > MAX_IMAGE_BYTES or side > MAX_SIDE:
            problems.append(f"{spec.dest}: {size} bytes, {side} px")
    pdf_file = out / PDF_PATH
    if pdf_file.stat().st_size > MAX_PDF_BYTES:
        problems.append(f"{PDF_PATH}: {pdf_file.stat().st_size} bytes")
    pdf = pypdfium2.PdfDocument(pdf_file)
    try:
        if len(pdf) != 2:
            problems.append(f"{PDF_PATH}: {len(pdf)} pages, expected 2")
        expect = [("Harvard Mark I", 1), ("CODASYL", 0)]
        for i, (needle, n_images) in enumerate(expect):
            page = pdf[i]
            text = page.get_textpage().get_text_range()
            got = len(list(page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=3)))
            if needle not in text:
                problems.append(f"{PDF_PATH} page {i + 1}: text layer lacks {needle!r}")
            if got != n_images:
                problems.append(f"{PDF_PATH} page {i + 1}: {got} image objects, expected {n_images}")
    finally:
        pdf.close()
    if sorted(p.name for p in out.iterdir() if p.is_dir()) != sorted(PARTITIONS):
        problems.append("partition folders differ from PARTITIONS")
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    if total > MAX_TOTAL_BYTES:
        problems.append(f"corpus is {total} bytes, over {MAX_TOTAL_BYTES}")
    if problems:
        sys.exit("sample corpus check failed:\n  " + "\n  ".join(problems))
    print(f"sample corpus OK: {sum(1 for p in out.rglob('*') if p.is_file())} files, {total / 1024:.0f} KiB in {out}")


def build(out: Path) -> None:
    """Delete and rewrite the corpus under ``out``, then check it."""
    out.mkdir(parents=True, exist_ok=True)
    for name in PARTITIONS:
        shutil.rmtree(out / name, ignore_errors=True)
    write_images(out)
    write_markdown(out)
    write_records(out)
    write_pdf(out)
    write_readme(out)
    check(out)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="corpus folder (default: sample_corpus/)")
    args = parser.parse_args(argv)
    build(args.out.resolve())


if __name__ == "__main__":
    main()
