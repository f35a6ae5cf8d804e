"""Photograph HTML pages in headless Chromium at 1,400 and 800 px wide, trimmed to the page and kept small.

    python benchmarks/page_shots.py WORK_DIR OUT_DIR run compare diagnosis optimize serve

reads ``WORK_DIR/<page>.html`` and writes ``OUT_DIR/<page>-<width>.png``: Chromium draws the page in a window
9,000 px tall (``--screenshot`` takes the window, not the page), the white below the page is cut, and the image
is reduced to a palette of 16 colours (Pillow's median cut; pngquant when installed does better); a long page
still over 150 KB is scaled down, after Chromium laid it out at its width (docs/benchmarks/pages.md).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image, ImageChops

WIDTHS = (1400, 800)
WINDOW_HEIGHT = 9000
COLOURS = 16
MARGIN = 8
#: The size each picture is kept under; a page over it is scaled down (its layout stays that of its width).
MAX_BYTES = 150 * 1024


def shoot(html: Path, png: Path, width: int) -> None:
    """``html`` drawn ``width`` px wide by headless Chromium into ``png``, trimmed and quantized."""
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.png"
        command = [
            shutil.which("chromium") or "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            f"--window-size={width},{WINDOW_HEIGHT}",
            f"--screenshot={raw}",
            html.resolve().as_uri(),
        ]
        subprocess.run(command, check=True, capture_output=True, timeout=180)
        image = Image.open(raw).convert("RGB")
    white = Image.new("RGB", image.size, "white")
    box = ImageChops.difference(image, white).getbbox() or (0, 0, width, 1)
    bottom = min(box[3] + MARGIN, image.height)  # keep the full width: a clipped right edge must show
    image = image.crop((0, 0, width, bottom))
    scale = 1.0
    while True:  # a long page is scaled down (after layout at its width) until it fits the size limit
        shown = image if scale == 1.0 else image.resize((round(width * scale), round(bottom * scale)), Image.LANCZOS)
        shown.quantize(COLOURS, method=Image.Quantize.MEDIANCUT).save(png, optimize=True)
        if shutil.which("pngquant"):
            subprocess.run(
                ["pngquant", "--force", "--quality", "20-60", "16", "--output", str(png), str(png)], check=False
            )
        if png.stat().st_size <= MAX_BYTES or scale < 0.4:
            return
        scale *= 0.85


def main(argv: list[str]) -> int:
    work, out, *pages = argv
    Path(out).mkdir(parents=True, exist_ok=True)
    for page in pages:
        for width in WIDTHS:
            png = Path(out) / f"{page}-{width}.png"
            shoot(Path(work) / f"{page}.html", png, width)
            print(f"{png}: {png.stat().st_size // 1024} KB, {Image.open(png).size[0]}x{Image.open(png).size[1]} px")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
