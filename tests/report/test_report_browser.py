"""The HTML report in a real headless browser (Debian ``chromium``); skipped when it is not installed.

CI installs it with ``apt-get install -y chromium``. Chromium runs offline: no network features, a
throw-away profile, no sandbox (containers run as root).
"""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
from matplotlib.image import imread
from synthetic import config, latency_samples, run

from surrobench.api.report import Report
from surrobench.report.html import report_page
from surrobench.results.compare import compare_runs

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
#: Matplotlib's first line colour (tab:blue, #1f77b4) as RGB in [0, 1]; plots drawn => such pixels exist.
TAB_BLUE = np.array([0x1F, 0x77, 0xB4]) / 255
_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, *_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def report_path(tmp_path_factory):
    cfgs = [
        config(latency_samples(m, 0.02, seed=i), size=size, batch=batch)
        for i, (m, size, batch) in enumerate([(1.0, 64, 1), (1.6, 64, 4), (3.0, 128, 1), (5.0, 128, 4)])
    ]
    faster = [
        config(latency_samples(0.8 * r.latency_ms.median, 0.02, seed=9), size=r.input_shape[-1], batch=r.batch)
        for r in cfgs
    ]
    base, new = run("base-1", cfgs), run("new-1", faster)
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(report_page(Report(runs=(base, new), comparison=compare_runs(base, new))))
    return path


def test_page_renders_with_plots_and_no_console_errors(report_path, tmp_path):
    shot = tmp_path / "shot.png"
    done = _chromium(
        tmp_path,
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1280,2400",
        f"--screenshot={shot}",
        report_path.as_uri(),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert not [line for line in done.stderr.splitlines() if "CONSOLE" in line]
    pixels = imread(shot)[..., :3]
    assert pixels.std() > 0.05  # not a blank page
    blue = np.all(np.abs(pixels - TAB_BLUE) < 0.08, axis=-1)
    assert blue.sum() > 500  # plot lines and markers were drawn


def test_dom_holds_every_plot_as_an_embedded_image(report_path, tmp_path):
    done = _chromium(tmp_path, "--dump-dom", report_path.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    images = re.findall(r'<img alt="[^"]*" src="data:image/png;base64,', done.stdout)
    assert len(images) == 7  # ratio forest + 3 per run
    assert "<h2>Comparison" in done.stdout
