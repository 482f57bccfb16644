"""The waits that end a timed step in the browser benchmarks: each checks the page once per animation frame.

A Playwright locator's ``wait_for`` checks at 0, 20, 70, 170 and 270 ms, then only every 500 ms: a change drawn 280 ms
after the wait began is timed at 770 ms. That step is larger than the differences the benchmarks measure, and it falls
on whichever page draws later. Every timed wait here is ``page.wait_for_function(..., polling="raf")`` instead: the
page is checked at each frame (about 16 ms), for the floor app and this app alike.
"""

from __future__ import annotations

HEATMAP = "[data-testid='stVegaLiteChart'] svg, [data-testid='stVegaLiteChart'] canvas"

# the page's run is over and drawn: no skeleton left, the script not running
IDLE = """!document.querySelector("[data-testid='stSkeleton']")
  && document.querySelector("[data-testid='stApp']")?.getAttribute("data-test-script-state") === "notRunning\""""

_COUNT = f"""(a) => document.querySelectorAll(a.selector).length >= a.count && {IDLE}"""

# the text as Playwright's get_by_text reads it: a visible element's text with its white space collapsed
_TEXT = """(a) => [...document.querySelectorAll(a.within)].some(
  (e) => e.checkVisibility() && e.textContent.replace(/\\s+/g, " ").includes(a.text))"""


def until(page, js: str, arg: object = None, timeout: float = 60_000) -> None:
    """Wait until the page function ``js`` (given ``arg``) is truthy, checked once per frame."""
    page.wait_for_function(js, arg=arg, polling="raf", timeout=timeout)


def until_drawn(page, count: int = 1, selector: str = HEATMAP, timeout: float = 60_000) -> None:
    """Wait until ``count`` elements match ``selector`` (by default: a heatmap drawn) and the run is over and drawn.
    A page load ends here: the heatmap exists only once the page's run has drawn it."""
    until(page, _COUNT, {"selector": selector, "count": count}, timeout)


def until_text(
    page, text: str, within: str = "[data-testid='stMain'], [data-testid='stSidebar']", timeout: float = 30_000
) -> None:
    """Wait until an element matching ``within`` shows ``text`` (white space collapsed), e.g. a new number in a chart:
    ``within="[data-testid='stVegaLiteChart'] text"``."""
    until(page, _TEXT, {"text": text, "within": within}, timeout)
