"""Every chart on a page can be seen and read, measured in real headless Chromium: a readable box and plot, text of
12 px or more, nothing cut or clipped, sized to its column, inside the main area, pixels not blank; each problem as a
line naming the page, the state, the viewport and the chart."""

from __future__ import annotations

from collections.abc import Callable

from tests.helpers.browser import blank_pixels, error_texts, guarded_context, seen_png, settle

MIN_W, MIN_H = 120, 60  # a readable chart box, px
MIN_FONT = 12.0  # px, any text written in a chart
MIN_PLOT = (100, 60)  # the data rectangle inside it, px
FILL = 0.9  # a chart takes at least this share of its column's width
SMALL, LARGE = (1280, 720), (1400, 1000)
VIEWPORTS, VIEWPORT_IDS = [SMALL, LARGE], ["1280x720", "1400x1000"]  # the two sizes every chart is checked at
HEATMAP_PAGES = {"scores", "scaling", "softmax", "output"}

# name: (address query, tokens, heads)
STATES = {
    "1 head, 6 tokens": ("preset=the_cat_sat_on_the_mat", 6, 1),
    "2 heads, 3 tokens": ("preset=the_cat_sat&heads=2", 3, 2),
    "4 heads, 64 tokens": ("preset=blank&size=64x16x16&heads=4", 64, 4),
    "causal mask, 6 tokens": ("preset=the_cat_sat_on_the_mat&mask=causal", 6, 1),
    "300 tokens": ("preset=blank&size=300x16x16", 300, 1),
    "2 heads, 300 tokens": ("preset=blank&size=300x16x16&heads=2", 300, 2),
}

# What each chart element shows, measured in the page: the drawing's box, the smallest text and any cut text.
# Canvas text is read through a hook on fillText (installed before the page's scripts run); svg text directly.
CANVAS_HOOK = """
(() => {
  const fill = CanvasRenderingContext2D.prototype.fillText;
  const clear = CanvasRenderingContext2D.prototype.clearRect;
  CanvasRenderingContext2D.prototype.clearRect = function (x, y, w, h) {
    if (w * h >= 0.5 * this.canvas.width * this.canvas.height) this.canvas.__texts = [];
    return clear.call(this, x, y, w, h);
  };
  CanvasRenderingContext2D.prototype.fillText = function (text, x, y, ...rest) {
    const m = /([0-9.]+)px/.exec(this.font);
    const t = this.getTransform();
    if (m && String(text).trim() && this.globalAlpha > 0) {
      const px = parseFloat(m[1]) * Math.hypot(t.a, t.b) / (window.devicePixelRatio || 1);
      (this.canvas.__texts = this.canvas.__texts || []).push([String(text), px]);
    }
    return fill.call(this, text, x, y, ...rest);
  };
})();
"""
# The text each chart writes, chart by chart: an svg's text elements (with ``shown``, only those laid out on the
# page), or what a canvas drew (read through CANVAS_HOOK, which must be installed before the page loads).
CHART_TEXTS = """
shown => [...document.querySelectorAll("[data-testid='stVegaLiteChart']")].map(el => {
  const svg = el.querySelector("svg.marks");
  if (svg) return [...svg.querySelectorAll("text")].filter(t => !shown || t.getClientRects().length)
    .map(t => t.textContent);
  const canvas = el.querySelector("canvas");
  return canvas && canvas.__texts ? canvas.__texts.map(t => t[0]) : [];
})
"""


def chart_texts(pg, shown: bool = False) -> list[list[str]]:
    """Each chart's written text (:data:`CHART_TEXTS`), in the page's order."""
    return pg.evaluate(CHART_TEXTS, shown)


MEASURE = (
    """
() => {
  const main = document.querySelector("[data-testid='stMain']").getBoundingClientRect();
  const out = [];
  document.querySelectorAll("[data-testid='stVegaLiteChart']").forEach((el, i) => {
    const g = el.querySelector("svg.marks, canvas");
    const box = (g || el).getBoundingClientRect();
    let texts = [];
    if (g && g.tagName.toLowerCase() === "svg") {
      texts = [...g.querySelectorAll("text")]
        .filter(t => t.textContent.trim() && t.getClientRects().length)
        .filter(t => {
          for (let n = t; n && n !== g; n = n.parentNode) {
            const s = getComputedStyle(n);
            if (s.display === "none" || s.visibility === "hidden" || parseFloat(s.opacity) === 0) return false;
            if (n.getAttribute && (n.getAttribute("opacity") === "0" || n.getAttribute("fill-opacity") === "0"))
              return false;
          }
          return true;
        })
        .map(t => [t.textContent, parseFloat(getComputedStyle(t).fontSize)]);
    } else if (g) {
      texts = g.__texts || [];
    }
    const title = el.querySelector("svg.marks .role-title-text");
    // the plot (data rectangle): the root view's background; a y-axis title must fit beside it
    const plot = el.querySelector("svg.marks .role-frame.root > g > path.background");
    let pb = plot ? plot.getBoundingClientRect() : null;
    if (pb && !(pb.width * pb.height)) {  // a chart of several plots: its root has none; the first plot's
      const inner = [...el.querySelectorAll("svg.marks path.background")].map(p => p.getBoundingClientRect());
      pb = inner.find(r => r.width * r.height > 0) || pb;
    }
    const yTitles = [...el.querySelectorAll("svg.marks .role-axis-title text")]
      .map(t => t.getBoundingClientRect()).filter(r => r.height > r.width).map(r => r.height);
    // the column (or page width) the chart is given
    const slot = el.closest("[data-testid='stElementContainer']") || el.parentElement;
    // where the chart's toolbar appears on hover: above its top right corner; text there would be covered
    const sr = slot.getBoundingClientRect();
    const bar = {left: sr.right - TOOLBAR_W, right: sr.right, top: sr.top - TOOLBAR_H, bottom: sr.top};
    const texts_ = "[data-testid='stMain'] [data-testid='stMarkdownContainer'] p, "
      + "[data-testid='stMain'] [data-testid='stCaptionContainer']";
    const covered = [...document.querySelectorAll(texts_)]
      .filter(t => [...t.getClientRects()].some(r => r.width > 0 && r.left < bar.right && r.right > bar.left
        && r.top < bar.bottom - 2 && r.bottom > bar.top + 2))
      .map(t => t.textContent.slice(0, 60)).slice(0, 2);
    out.push({
      index: i,
      kind: g ? g.tagName.toLowerCase() : "none",
      x: box.x - main.x, right: box.right - main.right, w: box.width, h: box.height,
      minFont: texts.length ? Math.min(...texts.map(t => t[1])) : null,
      small: texts.filter(t => t[1] < MIN_FONT_PX).slice(0, 3).map(t => t[0] + " @" + t[1] + "px"),
      cut: texts.filter(t => t[0].endsWith("…")).map(t => t[0]).slice(0, 3),
      clipped: g && g.tagName.toLowerCase() === "svg" ? [...g.querySelectorAll("text")]
        .filter(t => t.textContent.trim() && t.getClientRects().length)
        .filter(t => { const r = t.getBoundingClientRect();
          return r.left < box.left - 4 || r.right > box.right + 4  // (a glyph's box overhangs by a few px)
            || r.top < box.top - 4 || r.bottom > box.bottom + 4; })
        .map(t => t.textContent).slice(0, 3) : [],
      title: title ? title.textContent : "",
      several: el.querySelectorAll("svg.marks .role-title-text").length > 1,  // plots of a fixed size
      plotW: pb ? pb.width : null, plotH: pb ? pb.height : null,
      yTitle: yTitles.length ? Math.max(...yTitles) : 0,
      slot: sr.width,
      covered,
    });
  });
  return out;
}
""".replace("MIN_FONT_PX", str(MIN_FONT))
    .replace("TOOLBAR_W", "112")
    .replace("TOOLBAR_H", "44")
)


def stable_charts(pg, timeout_ms: int = 20_000) -> list[dict]:
    """The charts' measurements once the page has finished its run and the charts stopped changing size."""
    pg.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(state="attached")
    last, waited = None, 0
    while waited < timeout_ms:
        busy = (
            pg.locator("[data-testid='stSkeleton']").count()
            or pg.locator("[data-testid='stApp'][data-test-script-state='running']").count()
        )
        now = pg.evaluate(MEASURE)
        drawn = all(c["kind"] != "none" for c in now)
        if not busy and drawn and now == last:
            return now
        last = now
        pg.wait_for_timeout(300)
        waited += 300
    return last or []


def _blank(pg, index: int) -> str | None:
    """Why the chart's pixels look blank, or None: its pixels as seen (:func:`seen_png`), their grey levels' spread."""
    el = pg.locator("[data-testid='stVegaLiteChart']").nth(index)
    try:
        png = seen_png(el)
    except Exception as exc:  # noqa: BLE001 - a 0 px element cannot be screenshotted: that is the finding
        return f"no screenshot ({str(exc).splitlines()[0][:80]})"
    return blank_pixels(png)


def _expected_charts(slug: str, n: int, heads: int, trained: bool) -> int | None:
    """How many charts the page must draw (None: not checked): one heatmap per head on the step pages (and the zoom
    window beyond 64 tokens), the Overview's heatmap, the √d_k page's three (its gradient charts are drawn only when
    their expander is opened), the Learn page's three."""
    if slug in HEATMAP_PAGES:
        return min(heads, 8) + (1 if n > 64 and heads == 1 else 0)  # (the zoom window is drawn for one head)
    if slug == "":
        return 1
    if slug == "why_sqrt_dk":
        return 3
    if slug == "learn":
        return 3 if trained else 0
    return None


def check_page(pg, slug: str, state: str, viewport: tuple[int, int], trained: bool = False) -> list[str]:
    """Every problem with the charts on the current page, as lines naming page, state, viewport and chart."""
    query, n, heads = STATES[state]
    where = f"{slug or 'overview'} [{state}, {viewport[0]}x{viewport[1]}]"
    found = stable_charts(pg)
    problems = [f"{where}: error shown: {e[:120]}" for e in error_texts(pg)]
    want = _expected_charts(slug, n, heads, trained)
    if want is not None and len(found) != want:
        problems.append(f"{where}: {len(found)} charts drawn, expected {want}")
    for c in found:
        name = f"{where} chart {c['index'] + 1} ({c['title'] or c['kind']})"
        if c["w"] < MIN_W or c["h"] < MIN_H:
            problems.append(f"{name}: box {c['w']:.0f} x {c['h']:.0f} px, below {MIN_W} x {MIN_H}")
        if c["plotH"] is not None and (c["plotW"] < MIN_PLOT[0] or c["plotH"] < MIN_PLOT[1]):
            problems.append(
                f"{name}: plot area {c['plotW']:.0f} x {c['plotH']:.0f} px, below {MIN_PLOT[0]} x {MIN_PLOT[1]}"
            )
        if c["plotH"] is not None and c["yTitle"] > c["plotH"] + 2:
            problems.append(f"{name}: y-axis title ({c['yTitle']:.0f} px) taller than the plot ({c['plotH']:.0f} px)")
        if c["w"] < FILL * c["slot"] and not c["several"]:  # a chart of several plots is sized by its cells
            problems.append(f"{name}: {c['w']:.0f} px wide in a {c['slot']:.0f} px column (not sized to it)")
        if c["x"] < -1 or c["right"] > 1:
            problems.append(f"{name}: drawn outside the main area (x {c['x']:.0f}, right overhang {c['right']:.0f})")
        if c["small"]:
            problems.append(f"{name}: text below {MIN_FONT:g} px: {c['small']}")
        if c["cut"]:
            problems.append(f"{name}: text cut: {c['cut']}")
        if c["covered"]:
            problems.append(f"{name}: its toolbar (on hover) covers text: {c['covered']}")
        if c["clipped"]:
            problems.append(f"{name}: text outside the chart's box (clipped): {c['clipped']}")
        if c["w"] >= MIN_W and c["h"] >= MIN_H:  # (a smaller box is reported above)
            why = _blank(pg, c["index"])
            if why:
                problems.append(f"{name}: {why}")
    return problems


def page_problems(browser, url: str, slug: str, viewport: tuple[int, int], ready: Callable) -> list[str]:  # noqa: F811
    """Open ``url`` in a new browser context at ``viewport`` with the canvas hook, wait for the run to settle and for
    ``ready(page)``, and list every problem :func:`check_page` finds with its charts (the pages inside a model: their
    state names no query, so it is read as the default one)."""
    with guarded_context(browser, viewport={"width": viewport[0], "height": viewport[1]}) as context:
        pg = context.new_page()
        pg.add_init_script(CANVAS_HOOK)
        pg.goto(url)
        settle(pg)
        ready(pg)
        return check_page(pg, slug, "1 head, 6 tokens", viewport)
