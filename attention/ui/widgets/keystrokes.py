"""Keystrokes typed into a matrix grid before it has the focus, handed to its cell editor instead of being lost.

A person double-clicks a cell of a grid, types a number and presses Enter at once. Streamlit's grid (Glide Data
Grid, drawn on a canvas) opens its cell editor a moment after the double-click; on a page still busy drawing, that
moment can come after the keys. Measured in Chromium on a freshly loaded page (6 of 8 such edits lost, with no
message and nothing sent to the server): the digit went to the page's body (the grid did not have the focus yet),
the editor then opened with the old value selected and Enter kept it; or the digit and Enter both reached the grid's
canvas before its editor opened, and no editor opened at all. The grid is Streamlit's own and the server never sees
those keys, so the fix lives in the page: a small script (constant text, no user data) keeps the printable keys and
Enter that arrive within a second of a double-click on a matrix grid, before its cell editor has the focus, and types
them into the editor as soon as it opens (replacing its selected old value, as typing there does).
"""

from __future__ import annotations

import streamlit as st

SCRIPT = """<script>
(() => {
  if (window.__attentionGridKeys) return;
  window.__attentionGridKeys = true;
  const GRID = "[class*='st-key-ed-'] [data-testid='stDataFrame']";  // the matrix grids (keys.grid: "ed.…")
  const EDITOR = "#portal .gdg-input";
  let held = null;  // {until, keys} after a double-click on a grid, until its editor has the focus
  // before its cell editor opens, keys go to the page's body or to the grid's canvas; neither keeps them for it
  const early = () => {
    const a = document.activeElement;
    return !a || a === document.body || (a.tagName === "CANVAS" && !!a.closest(GRID));
  };
  document.addEventListener("dblclick", e => {
    held = e.target.closest && e.target.closest(GRID) ? {until: performance.now() + 1000, keys: []} : null;
  }, true);
  const hand = () => {
    if (!held) return;
    const input = document.querySelector(EDITOR);
    if (!input) {
      if (performance.now() > held.until) held = null; else requestAnimationFrame(hand);
      return;
    }
    const keys = held.keys; held = null;
    input.focus();
    for (const key of keys) {
      if (key === "Enter") {
        input.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter", code: "Enter", bubbles: true}));
      } else {
        document.execCommand("insertText", false, key);  // replaces the selected old value, as typing does
      }
    }
  };
  document.addEventListener("keydown", e => {
    if (!held || !early() || e.ctrlKey || e.metaKey || e.altKey) return;
    if (performance.now() > held.until) { held = null; return; }
    if (e.key !== "Enter" && e.key.length !== 1) return;
    e.preventDefault();
    e.stopPropagation();
    const first = held.keys.length === 0;
    held.keys.push(e.key);
    if (first) requestAnimationFrame(hand);
  }, true);
})();
</script>"""


def keep_early_keystrokes(where=st) -> None:
    """Add the script to the page (once per session's page; the script itself runs once per browser tab)."""
    where.html(SCRIPT, unsafe_allow_javascript=True)
