"""Debian's chromium for the tests that drive a page (test_browser.py, test_feedback_page.py,
test_hub.py): launched by path through Playwright, which never downloads one."""
import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def need_browser():
    """Skip, naming what is missing, without chromium or Playwright's client (fail instead under
    COURSE_REQUIRE_BROWSER=1, as in CI)."""
    problems = []
    if not CHROMIUM.exists():
        problems.append("Debian's chromium is missing: sudo apt-get install chromium")
    try:
        import playwright  # noqa: F401
    except ImportError:
        problems.append("the Playwright client is missing: make setup (it is in the `test` extra)")
    if problems:
        message = "the browser test needs: " + "; ".join(problems)
        if os.environ.get("COURSE_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
