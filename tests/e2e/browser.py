"""Headless Chromium driven by Selenium, for the tests of pages (the admin's and the account
holders'), with what they check on each page: a screenshot, and axe-core's accessibility rules.

Chromium and chromedriver come from Debian's packages (scripts/install-servers.sh installs them):
when they are missing the tests fail, they are not skipped. Screenshots go under TEST_OUTPUT_DIR
(default `test-output/`, git-ignored), in `e2e/`.
"""

import base64
import os
from pathlib import Path

import pytest
from axe_core_python.selenium import Axe
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
OUTPUT_DIR = Path(
    os.environ.get("TEST_OUTPUT_DIR", Path(__file__).resolve().parents[2] / "test-output")
)
# axe-core's impact levels that fail a page.
FAILING_IMPACTS = {"serious", "critical"}
# Narrower than this, a width is a phone's: Chromium lays the page out as a phone's browser does.
PHONE_BELOW = 600
WINDOW = (1280, 900)
# Where downloads land, for a test to read them.
DOWNLOADS = OUTPUT_DIR / "e2e" / "downloads"
AXE = Axe()  # axe-core's script, read once


def start_browser(*arguments: str) -> WebDriver:
    """Headless Chromium with `arguments` besides the usual ones (a `--host-resolver-rules` that
    sends a LAN name to loopback, say)."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            # Failing, not skipping: a browser test that silently never runs tests nothing.
            pytest.fail(f"{path} is missing: run scripts/install-servers.sh (make test does)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",  # the tests may run as root, which Chromium's sandbox refuses
        "--disable-dev-shm-usage",
        "--disable-gpu",
        # Debian's wrapper asks for GPU rasterization: without a GPU that falls back to a
        # software GL in a process of its own, which costs more CPU than plain software drawing.
        "--disable-software-rasterizer",
        "--window-size={},{}".format(*WINDOW),
        *arguments,
    ):
        options.add_argument(argument)
    DOWNLOADS.mkdir(parents=True, exist_ok=True)
    options.add_experimental_option(
        "prefs",
        {"download.default_directory": str(DOWNLOADS), "download.prompt_for_download": False},
    )
    # An explicit driver path: Selenium Manager would otherwise try to download one.
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.implicitly_wait(5)
    return driver


def reset_browser(driver: WebDriver) -> None:
    """Clear what a test leaves in the browser, as start_browser made it: other windows, the
    page, every cookie and stored item, granted permissions, the download folder, the size and
    any emulated width, the implicit wait."""
    for handle in driver.window_handles[1:]:
        driver.switch_to.window(handle)
        driver.close()
    driver.switch_to.window(driver.window_handles[0])
    driver.get("about:blank")
    driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
    driver.execute_cdp_cmd("Network.clearBrowserCache", {})
    driver.execute_cdp_cmd("Storage.clearDataForOrigin", {"origin": "*", "storageTypes": "all"})
    driver.execute_cdp_cmd("Browser.resetPermissions", {})
    driver.execute_cdp_cmd(
        "Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(DOWNLOADS)}
    )
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    driver.set_window_size(*WINDOW)
    driver.implicitly_wait(5)


def screenshot(driver: WebDriver, name: str) -> Path:
    """Save what the browser shows as `e2e/<name>.png`, and check it is a real picture."""
    OUTPUT_DIR.joinpath("e2e").mkdir(parents=True, exist_ok=True)
    path = OUTPUT_DIR / "e2e" / f"{name}.png"
    assert driver.save_screenshot(str(path))
    assert path.stat().st_size > 1000
    return path


def whole_page_screenshot(driver: WebDriver, name: str) -> Path:
    """Save the whole page, not only what the window shows (a phone's page is long), as
    `e2e/<name>.png`, and check it is a real picture."""
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        # optimizeForSpeed: a quicker PNG encoding (a larger file) of a page thousands of pixels
        # long.
        {"format": "png", "captureBeyondViewport": True, "optimizeForSpeed": True},
    )
    path = OUTPUT_DIR / "e2e" / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))
    assert path.stat().st_size > 1000
    return path


def at_width(
    driver: WebDriver, width: int | None, height: int | None = None, *, scale: int = 1
) -> None:
    """Show pages `width` CSS pixels wide: below PHONE_BELOW as a phone does (844 px high unless
    told), otherwise as a laptop's window (900 px high). `scale` device pixels to a CSS pixel
    sharpen the screenshots. None: the browser's own window again."""
    if width is None:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        return
    phone = width < PHONE_BELOW
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {
            "width": width,
            "height": height or (844 if phone else 900),
            "deviceScaleFactor": scale,
            "mobile": phone,
        },
    )


def sideways_scroll(driver: WebDriver) -> int:
    """How many CSS pixels the page scrolls sideways: above 0, it is wider than the window.

    Against the document's clientWidth, not window.innerWidth: as a phone does, Chromium zooms
    out of a page wider than the screen and innerWidth grows with it, and on a laptop innerWidth
    counts the vertical scroll bar, which hides up to its width of overflow.
    """
    return int(
        driver.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
    )


def count(driver: WebDriver, css: str) -> int:
    """How many elements match `css`, at once: find_elements waits out the implicit wait for one
    to appear, so asking it whether something is absent costs five seconds."""
    return int(driver.execute_script("return document.querySelectorAll(arguments[0]).length", css))


def main_text(driver: WebDriver) -> str:
    """The text of the page's main element, read in one step: an element found first and read
    after goes stale when a form's answer replaces the page in between."""
    return str(driver.execute_script('return document.querySelector("main")?.innerText ?? ""'))


def accessibility_violations(driver: WebDriver) -> list[str]:
    """axe-core's serious and critical violations on the page the browser shows, one line each."""
    # axe-core goes into a page once (half a megabyte to parse): a page checked again, at another
    # width, runs what it has.
    if not driver.execute_script("return typeof axe === 'object'"):
        driver.execute_script(AXE.axe_script)
    # Only the violations: by default axe also returns every node that passed (about 200 KB a
    # page), which the browser builds and sends and this never reads.
    results = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run({resultTypes: ['violations']}).then(done);"
    )
    return [
        f"{violation['id']} ({violation['impact']}): {violation['help']} at "
        + ", ".join(str(node["target"]) for node in violation["nodes"][:3])
        for violation in results["violations"]
        if violation.get("impact") in FAILING_IMPACTS
    ]
