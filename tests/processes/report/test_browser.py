"""The HTML report opened in a real headless Chromium: every image loads and the page is not blank.

Needs the Debian ``chromium`` package (``apt-get install chromium``); skips without it. The report
is built from the committed reference results, so no training runs here.
"""
import html
import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ddpbench.report.build import write_report
from ddpbench.testing import ROOT

#: each test starts a headless Chromium
REFERENCE = ROOT / "reports" / "examples" / "quick-cpu"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
TIMEOUT_S = 90
WINDOW = (1280, 4000)

#: appended to a copy of index.html (the report itself stays JavaScript-free)
PROBE_SCRIPT = """
<pre id="probe"></pre>
<script>
window.addEventListener("load", function () {
  var imgs = Array.prototype.map.call(document.images, function (img) {
    return {src: img.getAttribute("src"), url: img.src, complete: img.complete,
            naturalWidth: img.naturalWidth, naturalHeight: img.naturalHeight};
  });
  document.getElementById("probe").textContent = JSON.stringify(imgs);
});
</script>
"""


def find_browser():
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def run_browser(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    """Run headless Chromium with ``args``; its whole process group is killed afterwards."""
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-default-apps", "--hide-scrollbars", f"--user-data-dir={profile}", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"chromium did not finish within {TIMEOUT_S} s: {' '.join(cmd)}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # helpers (zygote, crashpad) left in its group
        except ProcessLookupError:
            pass
        proc.wait()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@pytest.fixture(scope="module")
def browser():
    path = find_browser()
    if path is None:
        pytest.skip("chromium not installed: apt-get install chromium")
    return path


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """index.html written from the committed quick-cpu results into a fresh folder."""
    out = tmp_path_factory.mktemp("report")
    for name in ("results.jsonl", "experiment.toml"):
        if (REFERENCE / name).exists():
            shutil.copy(REFERENCE / name, out / name)
    index = write_report(out)
    assert index == out / "index.html" and index.exists()
    return index


def test_every_image_loads(browser, report, tmp_path):
    page = report.read_text(encoding="utf-8")
    n_tags = len(re.findall(r"<img\b", page, flags=re.IGNORECASE))
    assert "<script" not in page.lower(), "the report is meant to be JavaScript-free"
    probe_page = (page.replace("</body>", PROBE_SCRIPT + "</body>", 1) if "</body>" in page
                  else page + PROBE_SCRIPT)
    probe = report.with_name("_probe.html")
    probe.write_text(probe_page, encoding="utf-8")

    done = run_browser(browser, tmp_path / "profile", "--allow-file-access-from-files",
                       "--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
    assert done.returncode == 0, f"chromium exited {done.returncode}:\n{done.stderr[-3000:]}"
    match = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, flags=re.DOTALL)
    assert match, f"no probe element in the dumped DOM:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert match.group(1).strip(), "the probe script did not run (window load never fired?)"
    images = json.loads(html.unescape(match.group(1)))

    print(f"\n{len(images)} images ({n_tags} <img> tags in index.html):")
    for img in images:
        print(f"  {img['src']}: complete={img['complete']} {img['naturalWidth']}x{img['naturalHeight']}")
    assert len(images) == n_tags
    assert len(images) >= 3
    for img in images:
        assert img["complete"] and img["naturalWidth"] > 0, f"image did not load: {img['src']} ({img['url']})"


def test_screenshot_is_not_blank(browser, report, tmp_path):
    from matplotlib.image import imread

    shot = tmp_path / "shot.png"
    done = run_browser(browser, tmp_path / "profile", f"--window-size={WINDOW[0]},{WINDOW[1]}",
                       f"--screenshot={shot}", report.as_uri())
    assert done.returncode == 0, f"chromium exited {done.returncode}:\n{done.stderr[-3000:]}"
    assert shot.exists(), f"no screenshot written:\n{done.stderr[-3000:]}"

    pixels = imread(shot)  # floats in [0, 1], RGB or RGBA
    rgb = np.round(pixels[..., :3] * 255).astype(np.uint8)
    height, width = rgb.shape[:2]
    not_white = (rgb < 240).any(axis=-1).mean()
    packed = (rgb[..., 0].astype(np.uint32) << 16) | (rgb[..., 1].astype(np.uint32) << 8) | rgb[..., 2]
    colours = len(np.unique(packed))  # far faster than np.unique(..., axis=0) on 5 M pixels
    print(f"\nscreenshot {width}x{height}: {not_white:.1%} of pixels not near-white, {colours} distinct colours")
    assert (width, height) == WINDOW
    assert not_white > 0.01, f"screenshot is (nearly) blank: {not_white:.2%} non-white pixels"
    assert colours > 200, f"only {colours} distinct colours: the plots did not render"


# -- a crafted results folder: its report must run nothing -------------------------------------

#: what a payload does when it runs: the marker is built at run time, so the page's text never holds it
RUNS = "document.title='PWN'+'ED'; localStorage.setItem('pwn','ED'); document.body.setAttribute('data-pwn','ED')"
PAYLOADS = (f"<script>{RUNS}</script>", f'<img src=x onerror="{RUNS}">', f"javascript:{RUNS}",
            f'"><svg onload="{RUNS}">', f"' autofocus onfocus='{RUNS}")
#: after the page loaded, what the probe reads back: nothing a payload would have set
READ_BACK = """
<pre id="probe"></pre>
<script>
window.addEventListener("load", function () {
  var links = Array.prototype.map.call(document.querySelectorAll("[href],[src]"), function (e) {
    return e.getAttribute("href") || e.getAttribute("src");
  });
  document.getElementById("probe").textContent = JSON.stringify({
    title: document.title, stored: localStorage.getItem("pwn"), marked: document.body.getAttribute("data-pwn"),
    scripts: document.scripts.length, links: links});
});
</script>
"""


def crafted_folder(folder: Path) -> Path:
    """The committed quick-cpu results with a payload in every string a page shows."""
    folder.mkdir()
    lines = []
    for number, line in enumerate((REFERENCE / "results.jsonl").read_text().splitlines()):
        record = json.loads(line)
        payload = PAYLOADS[number % len(PAYLOADS)]
        if record["kind"] == "sweep":
            record["env"] = {k: (payload if isinstance(v, str) else v) for k, v in record["env"].items()}
            record["experiment"]["name"] = payload
        elif record["kind"] == "run":
            record["traces"] = [{"rank": 0, "path": PAYLOADS[2], "bytes": 1}]
            if number % 3 == 0:
                record.update(status="failed", error=payload, result=None)
        lines.append(json.dumps(record))
    (folder / "results.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "search.json").write_text(json.dumps({
        "winner": PAYLOADS[0], "winner_samples_per_s": 1.0, "tied": [], "candidates": [], "same_buckets": [],
        "launches": PAYLOADS[1], "grid_launches": PAYLOADS[3], "budget": PAYLOADS[0]}))
    return folder


def test_a_crafted_folder_s_report_runs_nothing(browser, tmp_path):
    """Every payload of a crafted folder stays text: the page loaded in Chromium has no script of its own,
    and what the payloads would set (the title, localStorage, an attribute) reads back unset."""
    index = write_report(crafted_folder(tmp_path / "crafted"))
    page = index.read_text(encoding="utf-8")
    assert "<script" not in page.lower() and "<img src=x" not in page and "<svg" not in page
    assert "&lt;script&gt;" in page  # shown, not dropped
    probe = index.with_name("_probe.html")
    probe.write_text(page.replace("</body>", READ_BACK + "</body>", 1), encoding="utf-8")
    done = run_browser(browser, tmp_path / "profile", "--allow-file-access-from-files",
                       "--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
    assert done.returncode == 0, f"chromium exited {done.returncode}:\n{done.stderr[-3000:]}"
    match = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, flags=re.DOTALL)
    assert match and match.group(1).strip(), f"the probe did not run:\n{done.stderr[-2000:]}"
    seen = json.loads(html.unescape(match.group(1)))
    assert seen["title"].startswith("ddpbench report") and "PWNED" not in seen["title"]
    assert seen["stored"] is None and seen["marked"] is None
    assert seen["scripts"] == 1  # the probe's own
    assert "PWNED" not in done.stdout
    assert seen["links"] and all(link.startswith("#") or link.endswith(".png") or link == "https://ui.perfetto.dev"
                                 for link in seen["links"]), seen["links"]


# -- the answer table first, at a laptop's width and a phone's -----------------------------------------

#: (name, width, height) of the windows the page is opened in
WIDTHS = (("laptop", 1366, 900), ("phone", 390, 844))
#: a page that opens the report in a frame of the width asked for (headless Chromium's windows are at least
#: 500 px wide) and, once it loaded, says where the answer table sits in the frame and what is collapsed
FRAME = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="page" src="index.html" width="{width}" height="{height}" style="border:0;display:block"></iframe>
<pre id="probe"></pre>
<script>
window.addEventListener("load", function () {{
  var doc = document.getElementById("page").contentDocument, win = document.getElementById("page").contentWindow;
  var table = doc.querySelector("table.answers"), box = table.getBoundingClientRect();
  var details = table.nextElementSibling;
  document.getElementById("probe").textContent = JSON.stringify({{
    inner: win.innerWidth, left: box.left, right: box.right, top: box.top, height: box.height,
    scroll: doc.documentElement.scrollWidth,
    rows: table.querySelectorAll("tbody tr").length, collapsed: details.tagName === "DETAILS" && !details.open,
    sentences: details.querySelector("ul").checkVisibility()}});
}});
</script></body></html>"""


@pytest.mark.parametrize(("name", "width", "height"), WIDTHS, ids=[w[0] for w in WIDTHS])
def test_the_answer_table_fits_a_laptop_and_a_phone_and_comes_first(browser, report, tmp_path, name, width,
                                                                     height):
    """The verdict's answer table within the page's width (no sideways scrolling to read an answer), in the
    first screen, the sentences collapsed under it; a screenshot of each width is kept in the test's output
    folder (its path printed)."""
    from matplotlib.image import imread

    frame = report.with_name(f"_answers_{name}.html")
    frame.write_text(FRAME.format(width=width, height=height), encoding="utf-8")
    window = f"--window-size={max(width, 500)},{height + 40}"
    done = run_browser(browser, tmp_path / "profile", window, "--allow-file-access-from-files",
                       "--virtual-time-budget=10000", "--dump-dom", frame.as_uri())
    assert done.returncode == 0, f"chromium exited {done.returncode}:\n{done.stderr[-3000:]}"
    match = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, flags=re.DOTALL)
    assert match and match.group(1).strip(), f"the probe did not run:\n{done.stderr[-2000:]}"
    seen = json.loads(html.unescape(match.group(1)))
    print(f"\n{name} ({width}x{height}): the answer table spans x {seen['left']:.0f}-{seen['right']:.0f} of "
          f"{seen['inner']}, starts at y {seen['top']:.0f}, {seen['height']:.0f} px tall, {seen['rows']} rows")
    assert seen["inner"] == width and seen["rows"] == 5
    assert 0 <= seen["left"] and seen["right"] <= seen["inner"], seen
    assert seen["top"] < height, seen  # in the first screen
    assert seen["collapsed"] and not seen["sentences"], seen

    shot = tmp_path / f"answers-{name}.png"
    done = run_browser(browser, tmp_path / "profile2", window, "--allow-file-access-from-files",
                       "--virtual-time-budget=10000", f"--screenshot={shot}", frame.as_uri())
    assert done.returncode == 0 and shot.exists(), done.stderr[-3000:]
    rgb = imread(shot)[..., :3]
    assert (rgb[:height, :width] < 0.9).any(axis=-1).mean() > 0.02  # the page, not a blank frame
    print(f"screenshot: {shot}")
