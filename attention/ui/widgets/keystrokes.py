"""Keystrokes typed into a matrix grid before it has the focus, handed to its cell editor instead of being lost.

A person double-clicks a cell of a grid, types a number and presses Enter at once. Streamlit's grid (Glide Data
Grid, drawn on a canvas) opens its cell editor a moment after the double-click, and the editor takes its first keys
only once it has settled; on a page still busy drawing, the keys come first. Measured in Chromium on a freshly loaded
page (6 of 8 such edits lost, with no message and nothing sent to the server): the digit went to the page's body
(the grid did not have the focus yet), the editor then opened with the old value selected and Enter kept it; or the
digit and Enter reached the grid's canvas before its editor opened, and no editor opened at all; or they reached
the editor in its first frames, and Enter still committed the old value. The grid is Streamlit's own and the server
never sees those keys, so the fix lives in the page: a small script (constant text, no user data) keeps the printable
keys and Enter typed within 3 s of a double-click on a matrix grid, until its cell editor has opened and settled,
then types them into it (replacing the old value, as typing there does) and presses Enter once it shows them.
It stops watching as soon as the editor has them (or has settled with none kept), so the next keys (typed into the
next cell straight away) go to the grid as usual; keys kept when no editor opened within the 3 s are named in a
note at the top of the page, never dropped without a word.
"""

from __future__ import annotations

import streamlit as st

SCRIPT = """<script>
(() => {
  if (window.__attentionGridKeys) return;
  window.__attentionGridKeys = true;
  const GRID = "[class*='st-key-ed-'] [data-testid='stDataFrame']";  // the matrix grids (keys.grid: "ed.…")
  const EDITOR = "#portal .gdg-input";  // the cell editor the grid opens
  let armed = 0;  // until when keys after a double-click on a grid are watched (ms)
  let fresh = false;  // a cell editor has just opened: its first frames
  let held = [];  // keys kept for it, in the order typed
  const frames = (n, f) => (n ? requestAnimationFrame(() => frames(n - 1, f)) : f());
  const lost = keys => {
    const note = document.createElement("div");
    note.setAttribute("role", "alert");
    note.style.cssText = "position:fixed;top:4rem;left:50%;transform:translateX(-50%);z-index:100000;"
      + "background:#fff3cd;color:#3d2c00;border:1px solid #b58900;border-radius:6px;padding:.5rem .9rem;";
    note.textContent = "What you typed (" + keys.map(k => (k === "Enter" ? "⏎" : k)).join("").slice(0, 40)
      + ") did not reach a cell: no cell editor opened. Double-click the cell and type it again.";
    document.body.appendChild(note);
    setTimeout(() => note.remove(), 8000);
  };
  const flush = () => {
    if (!held.length || fresh) return;  // the editor's first frames end by calling this again
    const input = document.querySelector(EDITOR);
    if (!input) {
      if (performance.now() <= armed) return frames(1, flush);
      lost(held);  // no editor opened in time: said where the eye is, never dropped silently
      held = [];
      armed = 0;
      return;
    }
    const keys = held;
    held = [];
    armed = 0;  // handed over: the next keys go where the person types them (the editor, or the grid's next cell)
    input.focus();
    input.select();  // typing replaces the old value, as it does in an editor a double-click opened
    const text = keys.filter(k => k !== "Enter").join("");
    if (text) document.execCommand("insertText", false, text);
    if (keys.includes("Enter")) {  // once the editor has drawn the text: it commits what it shows
      frames(2, () => input.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter", code: "Enter", bubbles: true})));
    }
  };
  new MutationObserver(() => {
    const input = document.querySelector(EDITOR);
    if (input && !input.dataset.seen) {
      input.dataset.seen = "1";
      fresh = true;
      frames(2, () => setTimeout(() => {
        fresh = false;
        if (!held.length) armed = 0;  // settled with nothing kept: it takes the next keys itself
        flush();
      }, 30));
    }
  }).observe(document.body, {childList: true, subtree: true});
  document.addEventListener("dblclick", e => {
    armed = e.target.closest && e.target.closest(GRID) ? performance.now() + 3000 : 0;
    held = [];
  }, true);
  document.addEventListener("keydown", e => {
    if (!e.isTrusted || e.ctrlKey || e.metaKey || e.altKey || performance.now() > armed) return;
    if (e.key !== "Enter" && e.key.length !== 1) return;
    const input = document.querySelector(EDITOR);
    const a = document.activeElement;
    const ours = !a || a === document.body || a === input || !!(a.closest && a.closest(GRID));
    if (!ours || !(!input || fresh || held.length)) return;  // an editor open and settled: it takes its keys
    e.preventDefault();
    e.stopPropagation();
    held.push(e.key);
    if (held.length === 1) frames(1, flush);
  }, true);
})();
</script>"""


def keep_early_keystrokes(where=st) -> None:
    """Add the script to the page (once per session's page; the script itself runs once per browser tab)."""
    where.html(SCRIPT, unsafe_allow_javascript=True)
