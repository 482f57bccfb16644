"""One browser-history entry per page visited (Back leaves it in one press), and the page visited opens at its top.

Streamlit writes every change of the address's parameters (``st.query_params``) with ``history.pushState``: each
change a person makes on a page (the app keeps the whole state in the address) added an entry, and Back stepped
through them one by one (five presses to leave a page after four changes). A small script (constant text, no user
data) makes a change that keeps the page's path replace the current entry instead; a move to another page still
adds one, so Back returns to the page before, with its state as it was left.

Streamlit does not scroll on a move to another page: the new page started at its top only because the old page's
elements went before the new ones came, and the view, shorter for a moment, was clamped to its top. On a busy machine
the old page stays drawn (faded) until the new one's elements replace it in place, so the page opened kept the
scroll of the page left: *6. Softmax* opened from the Overview's *Start here* list showed its bottom (issue 49 §4;
seen with Chromium's CPU throttled 8×, and in a test run on three processes). So the same script scrolls the page
to its top when the path changes: a move to another page (a link, the navigation) or Back and Forward between pages.
"""

from __future__ import annotations

SCRIPT = """<script>
(() => {
  if (window.__attentionHistory) return;
  window.__attentionHistory = true;
  const push = history.pushState.bind(history);
  const toTop = () => {  // the view, whichever element scrolls it
    window.scrollTo(0, 0);
    for (const el of document.querySelectorAll("[data-testid='stMain'], [data-testid='stAppViewContainer']")) {
      el.scrollTop = 0;
    }
  };
  let path = location.pathname;
  const moved = () => {  // another page: at its top, before its elements replace the last page's
    if (location.pathname !== path) toTop();
    path = location.pathname;
  };
  history.pushState = (state, title, url) => {
    const next = url === undefined || url === null ? location.href : new URL(url, location.href).href;
    if (new URL(next).pathname === location.pathname) return history.replaceState(state, title, url);
    push(state, title, url);  // another page: an entry of its own, for Back
    moved();
  };
  window.addEventListener("popstate", moved);
})();
</script>"""
