"""The HTML report renders in a real browser (headless Chromium, Debian's `chromium` package), without script
errors, with all its charts drawn; and a screenshot of it is not blank."""

import re
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.slow

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars"]  # fmt: skip


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path, "headless Chromium is needed for this test: apt-get install chromium (see DEVELOPERS.md)"
    return path


def browse(page, tmp_path, *extra):
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"  # a fresh profile per run
    command = [chromium(), *FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def dom_of(page, tmp_path) -> str:
    done = browse(page, tmp_path, "--virtual-time-budget=5000", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def page_state(dom: str) -> dict:
    body = re.search(r"<body([^>]*)>", dom).group(1)
    attributes = dict(re.findall(r'data-([a-z]+)="([^"]*)"', body))
    errors = re.search(r'<pre id="js-errors"[^>]*>(.*?)</pre>', dom, re.S).group(1)
    return {"attributes": attributes, "errors": errors}


@pytest.mark.parametrize("script, charts", [("vanishing_rnn_time", 7), ("vanishing_sigmoid_deep", 6)])
def test_report_renders_without_errors(run_case, tmp_path, script, charts):
    run = run_case(script, every=4)
    page = run.doctor.report(tmp_path / f"{script}.html")
    state = page_state(dom_of(page, tmp_path))
    assert state["errors"] == ""
    assert state["attributes"]["ready"] == "yes"  # the page's script ran to the end
    assert int(state["attributes"]["charts"]) >= charts
    assert int(state["attributes"]["findings"]) == len(run.doctor.findings)

    shot = tmp_path / f"{script}.png"
    done = browse(page, tmp_path, "--window-size=900,2400", f"--screenshot={shot}")
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[0] == 2400 and pixels.shape[1] == 900
    assert pixels[..., :3].std() > 0.05  # not a blank page: text, colours, charts


def test_the_error_check_can_fail(run_case, tmp_path):
    """The same check on a page with a broken script reports the error (so a clean result means something)."""
    run = run_case("vanishing_rnn_time", every=4)
    page = run.doctor.report(tmp_path / "broken.html")
    page.write_text(page.read_text().replace("</main>", "</main><script>null.explode();</script>"))
    state = page_state(dom_of(page, tmp_path))
    assert "TypeError" in state["errors"] or "null" in state["errors"]
