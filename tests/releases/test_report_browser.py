"""The report page in a real headless Chromium (Debian's ``chromium``; .ci/run installs it):
opening it makes no network request and logs no console error, every section is in the DOM the
browser built, the risk table there equals ``ppdp risk --json``, and a screenshot is taken.

Without chromium the test is skipped, or fails when PPDP_REQUIRE_BROWSER=1 (CI).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ppdp.engine.app.report.html import SECTIONS
from ppdp.engine.risk import risk_rows
from tests.releases.test_report import GEN_QIDS, Page, releases, report, risk_json  # noqa: F401 (fixture)
from tests.support import browser

ARTIFACTS = os.environ.get("PPDP_REPORT_ARTIFACTS")  # a directory to keep the screenshots in


@pytest.fixture(scope="module")
def chromium() -> str:
    exe = browser.chromium()
    if exe is None:
        if os.environ.get("PPDP_REQUIRE_BROWSER", "") not in ("", "0"):
            pytest.fail("chromium is not installed (PPDP_REQUIRE_BROWSER=1): apt-get install -y chromium", pytrace=False)
        pytest.skip("chromium is not installed")
    return exe


@pytest.mark.parametrize("external", [False, True], ids=["internal", "external"])
def test_report_in_headless_chromium(chromium, releases, tmp_path, capsys, external):  # noqa: F811
    db = releases["adult_gen"]
    # the internal page also trains the classifier (accuracy bars); both show the quality models
    report(db, "adult_gen", tmp_path, *(["--external", "--classify", "salary-class"] if external else ["--classify", "salary-class"]))
    path = next(tmp_path.glob("adult_gen*.html"))
    seen = browser.visit(path)
    assert seen.requests == [seen.url]  # the page itself, nothing else
    assert seen.foreign_requests == [] and seen.console_errors == []
    dom = Page(seen.dom)
    assert dom.sections == [key for key, _ in SECTIONS]
    assert "accuracy: original, release, ZeroR" in seen.dom and "granularity (ARX Loss)" in seen.dom
    # the external page shows each attribute's release distribution, never the source's
    assert ("share of records per value" in seen.dom) and (("<title>source " in seen.dom.split('id="analysis"')[1]
                                                           .split("</section>")[0]) != external)
    rel = risk_json(capsys, f"duckdb://{db}", "adult_gen", "--qids", ",".join(GEN_QIDS))
    src = risk_json(capsys, f"duckdb://{db}", "--table", "main.adult", "--qids", ",".join(GEN_QIDS))
    for _, key in risk_rows():
        for side, expected in (("release", rel), ("source", src)):
            value = expected
            for part in key.split("."):
                value = value[part]
            assert dom.risk[(key, side)] == value, (key, side)
    assert seen.screenshot[:8] == b"\x89PNG\r\n\x1a\n" and len(seen.screenshot) > 10_000
    (tmp_path / "report.png").write_bytes(seen.screenshot)
    # the command-line way a person would check it gives the same sections
    assert Page(browser.dump_dom(path)).sections == [key for key, _ in SECTIONS]
    if ARTIFACTS:
        Path(ARTIFACTS).mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / "report.png", Path(ARTIFACTS) / f"report_{'external' if external else 'internal'}.png")
        shutil.copy(path, Path(ARTIFACTS) / f"report_{'external' if external else 'internal'}.html")
