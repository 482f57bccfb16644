"""One entry in the browser's history per page visited, so Back leaves a page in one press.

Streamlit writes every change of the address's parameters (``st.query_params``) with ``history.pushState``: each
change a person makes on a page (the app keeps the whole state in the address) added an entry, and Back stepped
through them one by one (five presses to leave a page after four changes). A small script (constant text, no user
data) makes a change that keeps the page's path replace the current entry instead; a move to another page still
adds one, so Back returns to the page before, with its state as it was left.
"""

from __future__ import annotations

SCRIPT = """<script>
(() => {
  if (window.__attentionHistory) return;
  window.__attentionHistory = true;
  const push = history.pushState.bind(history);
  history.pushState = (state, title, url) => {
    const next = url === undefined || url === null ? location.href : new URL(url, location.href).href;
    if (new URL(next).pathname === location.pathname) return history.replaceState(state, title, url);
    return push(state, title, url);  // another page: an entry of its own, for Back
  };
})();
</script>"""
