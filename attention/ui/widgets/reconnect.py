"""A tab that reconnects (its replica died: a failover) reruns the page in full on its new session.

When a replica dies, Streamlit's frontend reconnects its tabs through nginx to another replica, which opens a new
session for each; the page keeps showing what the old session drew. Streamlit asks for a full rerun after a
reconnect only when the last run was cut short or was a fragment's run, so after an ordinary full run the new
session has run nothing: it knows none of the page's fragments, and the first click inside one (the step pages'
body and results are fragments: a tab, an expander, the sidebar's tools, an uploaded file) is dropped ("The fragment
... does not exist anymore" in the server's log) and the page does not change. Measured behind nginx with two
replicas, kill -9 on one: the sidebar's *Save, share, export* did not open (so no file could be uploaded there).
So a small script (constant text, no user data) watches for a new connection to the server once the page
has its first one, and when it opens asks for a full rerun, as Streamlit's own R key does: the new session rebuilds
the state from the address and draws every fragment, and the next click works. A reconnect to the same session
(a network blip) only reruns the page, as any interaction does.
"""

from __future__ import annotations

SCRIPT = """<script>
(() => {
  if (window.__attentionReconnect) return;
  window.__attentionReconnect = true;
  const Native = window.WebSocket;  // the page's first connection is already open: any new one is a reconnect
  const rerun = () => {  // Streamlit's R shortcut (a full rerun); sent to the page, never to a box being typed in
    const key = {key: "r", code: "KeyR", keyCode: 82, which: 82, bubbles: true};
    document.body.dispatchEvent(new KeyboardEvent("keydown", key));
    document.body.dispatchEvent(new KeyboardEvent("keyup", key));
  };
  function Watched(url, protocols) {
    const ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    if (String(url).includes("/_stcore/stream")) ws.addEventListener("open", () => setTimeout(rerun, 1000));
    return ws;
  }
  Watched.prototype = Native.prototype;
  for (const k of ["CONNECTING", "OPEN", "CLOSING", "CLOSED"]) Watched[k] = Native[k];
  window.WebSocket = Watched;
})();
</script>"""
