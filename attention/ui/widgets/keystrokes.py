"""Keystrokes typed into a matrix grid before it has the focus, handed to its cell editor instead of being lost.

A person double-clicks a cell of a grid, types a number and presses Enter at once. Streamlit's grid (Glide Data
Grid, drawn on a canvas) opens its cell editor a moment after the double-click, and the editor takes its first keys
only once it has settled; on a page still busy drawing, the keys come first. Measured in Chromium on a freshly loaded
page (6 of 8 such edits lost, with no message and nothing sent to the server): the digit went to the page's body
(the grid did not have the focus yet), the editor then opened with the old value selected and Enter kept it; or the
digit and Enter reached the grid's canvas before its editor opened, and no editor opened at all; or they reached
the editor in its first frames, and Enter still committed the old value. The grid is Streamlit's own and the server
never sees those keys, so the fix lives in the page: a small script (constant text, no user data) keeps the printable
keys, Enter and Tab typed within 3 s of a double-click on a matrix grid (or QK-norm's gains grid), until its cell
editor has opened and settled, then types them into it (replacing the old value, as typing there does) and presses
Enter (or Tab) once it shows them. It stops watching as soon as the editor has them (or has settled with none kept),
so the next keys (typed into the next cell straight away) go to the grid as usual; keys kept when no editor opened
within the 3 s are named in a note at the top of the page, never dropped without a word. A key typed on a selected
cell (filling a column: type, Enter, type) opens its editor with that key; the keys after it are kept the same way
until the editor is ready (on a slow machine the editor dropped them: 2.5 became 5). The keys after a double-click
are the cell's wherever the focus still is (on a busy page the grid took the focus late, and the first digit went
into the box focused before: the temperature's 1 became 16.5), until the person presses elsewhere, or Escape (which
drops them, as it cancels an edit). The keys typed while a handed-over value's Enter is on its way are kept for the
cells below, so none can reach the closing editor; a press before they are typed there names them in a note. A
committed editor lingers on a busy page (measured: 0.3–0.7 s at 4× throttle): until it has gone, it is not the editor
keys go to, and keys typed meanwhile on the grid are kept and typed into the next cell (below, or right after a Tab)
once it has (before, one reached the closing editor, or opened none: 3.75 lost, and the note named "3." at another
row); a press elsewhere ends that, and a move typed first (Enter or Tab before the value) is named, not guessed.

And every number a cell editor commits (Enter or Tab) is checked once the runs it starts are over: the matrix's grid
must show it in that cell, to the digits it shows. If not (the edit never reached the server, or reached a grid that
was being replaced, as on a busy machine it can), a note at the top of the page names the value and its cell (the
matrix, the row's and the column's labels) and asks to retype it. The cell of an editor a key opened right after a
commit is the one the commit moved to (the row below, or the next column): the grid's accessible table still shows the
cell before for a while, and a note once named the wrong row. When the cell committed was not known, or Shift turned
the move back, or other keys moved the selection, the next cell is not known either, and no note guesses it. A value
that is not a number is left to the server, which names it under the grid.
"""

from __future__ import annotations

SCRIPT = """<script>
(() => {
  if (window.__attentionGridKeys) return;
  window.__attentionGridKeys = true;
  // the matrix grids (keys.grid: "ed.…") and QK-norm's gains grid (keys.gains_grid: "gains.…")
  const GRID = ["ed", "gains"].map(k => `[class*='st-key-${k}-'] [data-testid='stDataFrame']`).join(", ");
  const nameOf = grid => {  // what a grid edits: "W_q", "X", ..., or "QK-norm gains"; null for another grid
    const keyed = grid.closest("[class*='st-key-ed-'], [class*='st-key-gains-']");
    const cls = keyed && Array.from(keyed.classList).find(c => /^st-key-(ed|gains)-/.test(c));
    return !cls ? null : cls.startsWith("st-key-gains-") ? "QK-norm gains" : cls.slice(10).split("-")[0];
  };
  const EDITOR = "#portal .gdg-input";  // the cell editor the grid opens
  let closing = null;  // the editor an Enter or Tab last committed: on a busy page it lingers for a while after
  const editorNow = () => Array.from(document.querySelectorAll(EDITOR)).find(i => i !== closing) || null;
  const whenGone = (then, until = performance.now() + 3000) => {  // once the committed editor has gone (≤ 3 s)
    if (!closing || !closing.isConnected || performance.now() > until) return then();
    frames(1, () => whenGone(then, until));
  };
  let armed = 0;  // until when keys after a double-click on a grid are watched (ms)
  let fresh = false;  // a cell editor has just opened: its first frames
  let held = [];  // keys kept for it, in the order typed
  let prefix = [];  // the key typed on a selected cell that opened its editor (the grid puts it there itself)
  let after = null;  // keys typed while a handed-over value's Enter is on its way (null: none on its way)
  let editing = null;  // the cell whose editor is open: found as it opens (the grid's table lags the keys after)
  let moved = null;  // where the last commit moved the selection: {cell, at} (the row below, or the column right)
  let unknown = false;  // the open editor's cell is not known (and is not guessed from the grid's lagging table)
  let keep = false;  // keys typed while a committed editor lingers are kept for the cell below (until a press)
  const focusOnGrid = () => {  // the focus is in a grid or its cell editor: keys typed go to a cell
    const a = document.activeElement;
    return !!(a && a.closest && (a.closest(GRID) || a.closest("#portal")));
  };
  const kept = key => (ENDS(key) || key.length === 1) && performance.now() > armed && keep && !!closing
    && closing.isConnected && focusOnGrid();  // typed while the committed editor lingers: for the cell below
  const ENDS = k => k === "Enter" || k === "Tab";  // the keys that commit a cell editor's text
  const frames = (n, f) => (n ? requestAnimationFrame(() => frames(n - 1, f)) : f());
  const NO_EDITOR = " did not reach a cell: no cell editor opened. Double-click the cell and retype it.";
  const AFTER_A_MOVE = " was typed after a move, while the cell before was still closing: retype it where you meant.";
  const lost = (keys, why = NO_EDITOR, own = prefix) => {  // said where the eye is, never dropped silently
    const note = document.createElement("div");
    note.setAttribute("role", "alert");
    note.style.cssText = "position:fixed;top:4rem;left:50%;transform:translateX(-50%);z-index:100000;"
      + "background:#fff3cd;color:#3d2c00;border:1px solid #b58900;border-radius:6px;padding:.5rem .9rem;";
    const glyph = {Enter: "⏎", Tab: "⇥"};
    const shown = own.concat(keys).map(k => glyph[k] || k).join("").slice(0, 40);
    const sel = where(lastGrid);  // the cell aimed at: its column too when the grid shows it selected
    const aimed = aim ? (sel && sel.name === aim.name && sel.row === aim.row ? sel : aim) : sel;
    const cell = why === NO_EDITOR ? aimed : null;
    const col = cell && cell.col ? ` · ${cell.col}` : "";
    const at = cell && cell.row !== null ? ` for ${cell.name} row ${cell.row}${col}` : "";
    note.className = "attention-note";
    note.dataset.at = String(performance.now());
    note.textContent = "What you typed (" + shown + ")" + at + why;
    document.body.appendChild(note);
    setTimeout(() => note.remove(), 30000);  // or at the next double-click on a grid: the retyping
  };
  let aim = null;  // the matrix and row a double-click aimed at (rows 35 px under a 35 px header)
  const aimAt = (grid, y) => {
    const name = nameOf(grid);
    const scroller = grid.querySelector(".dvn-scroller");
    const k = Math.floor((y - grid.getBoundingClientRect().top + (scroller ? scroller.scrollTop : 0)) / 35) - 1;
    const tr = grid.querySelectorAll("tbody tr")[k];
    return name ? {name, row: tr && tr.children[0] ? tr.children[0].textContent : null} : null;
  };
  const flush = () => {
    if (!held.length || fresh) return;  // the editor's first frames end by calling this again
    const input = editorNow();
    if (!input) {
      if (performance.now() <= armed) return frames(1, flush);
      if (held.some(k => !ENDS(k))) lost(held);  // no editor opened in time: said, never dropped silently
      [held, prefix] = [[], []];
      armed = 0;
      return;
    }
    const enter = held.findIndex(ENDS);  // this cell's keys end at the first Enter or Tab; the rest: the next cells'
    const mine = enter < 0 ? held : held.slice(0, enter + 1), rest = enter < 0 ? [] : held.slice(enter + 1);
    held = [];
    armed = 0;  // handed over: the next keys go where the person types them (the editor, or the grid's next cell)
    input.focus();
    input.select();  // typing replaces the old value, as it does in an editor a double-click opened
    const text = prefix.concat(mine.filter(k => !ENDS(k))).join("");
    prefix = [];
    if (text) document.execCommand("insertText", false, text);
    if (enter >= 0) {  // once the editor has drawn the text: it commits what it shows (and moves down, or right)
      const end = mine[enter];  // Enter or Tab
      const below = after = rest;  // the keys typed until then are the next cells' too, not this editor's
      frames(2, () => {
        input.dispatchEvent(new KeyboardEvent("keydown", {key: end, code: end, bubbles: true}));
        handOn(below);
      });
    }
  };
  const handOn = below => whenGone(() => frames(2, () => {  // the keys kept for the cells below, once the editor
    if (after !== below) return;  // has gone (before, a key opened no editor, or reached the closing one); unless a
    after = null;  // double-click or a press elsewhere took them back first
    if (below.length) next(below);
  }));
  const next = rest => {  // keys typed for the cells below, held while this one's editor opened: type them there
    const target = document.activeElement && document.activeElement.closest && document.activeElement.closest(GRID)
      ? document.activeElement : null;
    const first = rest.find(k => !ENDS(k));
    if (first === undefined) return;  // an Enter or Tab more: no value to type
    if (!target) return lost(rest, NO_EDITOR, []);
    if (ENDS(rest[0])) return lost(rest, AFTER_A_MOVE, []);  // where the move meant to go would be a guess
    [armed, prefix, held] = [performance.now() + 3000, [first], rest.slice(rest.indexOf(first) + 1)];
    target.dispatchEvent(new KeyboardEvent("keydown", {key: first, bubbles: true}));  // opens the next cell's editor
    if (held.length) frames(1, flush);
  };
  new MutationObserver(() => {
    const input = editorNow();
    if (input && !input.dataset.seen) {
      input.dataset.seen = "1";
      fresh = true;
      // the cell: where the last commit moved the selection, when a key opened this editor right after it (the
      // grid's accessible table still shows the cell before then: unknown if that one was); else the selected cell
      const recent = moved && performance.now() - moved.at < 5000;
      [editing, unknown, moved] = [recent ? moved.cell : where(lastGrid), !!recent && !moved.cell, null];
      frames(2, () => setTimeout(() => {
        fresh = false;
        if (!held.length) [armed, prefix] = [0, []];  // settled with nothing kept: it takes the next keys itself
        flush();
      }, 30));
    }
  }).observe(document.body, {childList: true, subtree: true});
  // Every value committed in a grid's cell editor is checked once the runs it starts are over: the cell must show
  // it (to the digits it shows), or a note names the value and its cell, to retype. Never dropped without a word.
  const num = t => Number(String(t).trim().replace(/^\\u2212/, "-"));
  const shows = (text, value) => {  // the cell's text is the value, to half a unit of its last digit shown
    const got = num(text);
    if (!Number.isFinite(got)) return false;
    const m = String(text).trim().match(/^[-\\u2212+]?\\d*(?:\\.(\\d*))?(?:[eE]([-+]?\\d+))?$/);
    const unit = m ? Math.pow(10, Number(m[2] || 0) - (m[1] || "").length) : 0;
    return Math.abs(got - value) <= unit / 2 * (1 + 1e-9) + 1e-12 * Math.abs(value);
  };
  const HEADS = "thead th, thead [role='columnheader']";  // the column labels of a grid's accessible table
  let lastGrid = null;  // the grid a person last pressed or double-clicked: its selected cell is the one edited
  for (const type of ["pointerdown", "dblclick", "focusin"]) {
    document.addEventListener(type, e => {
      const g = e.target.closest && e.target.closest(GRID);
      if (g) lastGrid = g;
    }, true);
  }
  const where = grid => {  // the selected cell of a grid: matrix name, row and column labels
    const cells = grid ? grid.querySelectorAll("td[aria-selected='true']") : [];
    if (cells.length !== 1) return null;
    const td = cells[0], tr = td.closest("tr");
    const name = nameOf(grid);
    const head = grid.querySelectorAll(HEADS)[Number(td.getAttribute("aria-colindex")) - 1];
    if (!name || !tr || !head || !tr.children.length) return null;
    return {name, row: tr.children[0].textContent, col: head.textContent};
  };
  const gridsOf = name => Array.from(document.querySelectorAll(GRID)).filter(g => nameOf(g) === name);
  const cellNow = cell => {  // the text the matrix's grid shows now at that row and column, or null
    for (const g of gridsOf(cell.name)) {
      const cols = Array.from(g.querySelectorAll(HEADS), h => h.textContent);
      const j = cols.indexOf(cell.col);
      const tr = Array.from(g.querySelectorAll("tbody tr")).find(r => r.children[0]?.textContent === cell.row);
      if (j > 0 && tr && tr.children[j]) return tr.children[j].textContent;
    }
    return null;
  };
  let typed = [];  // values committed and not checked yet: {cell, text, value, at, ran}
  const missed = [];
  const sayMissed = () => {
    let note = document.getElementById("attention-missed");
    if (!note) {
      note = document.createElement("div");
      note.id = "attention-missed";
      note.className = "attention-note";
      note.setAttribute("role", "alert");
      note.style.cssText = "position:fixed;top:4rem;left:50%;transform:translateX(-50%);z-index:100000;max-width:36rem;"
        + "background:#fff3cd;color:#3d2c00;border:1px solid #b58900;border-radius:6px;padding:.5rem .9rem;";
      document.body.appendChild(note);
    }
    note.textContent = missed.slice(-4).map(t => `${t.name} ${t.row} · ${t.col}: ${t.text}`).join("; ")
      + " did not land (the cell shows another number)."
      + " Double-click the cell and retype it.";
    clearTimeout(note.timer);
    note.timer = setTimeout(() => { note.remove(); missed.length = 0; }, 30000);
  };
  const running = () => !!document.querySelector("[data-testid='stApp'][data-test-script-state='running']");
  const check = () => {
    const now = performance.now();
    for (const t of typed) t.ran = t.ran || running();
    const busy = running() || document.querySelector("[data-testid='stSkeleton']");
    const due = typed.filter(t => !busy && now - t.at > (t.ran ? 1500 : 5000));
    typed = typed.filter(t => !due.includes(t));
    for (const t of due) {
      const shown = cellNow(t.cell);
      if (shown === null || shows(shown, t.value)) continue;  // landed (or its grid is gone: nothing to compare)
      missed.push({...t.cell, text: t.text});
    }
    if (due.length && missed.length) sayMissed();
    if (typed.length) setTimeout(check, 250);
  };
  let segs = [[]];  // the characters a person typed for each cell, in order (null: they also moved or deleted)
  document.addEventListener("pointerdown", () => { segs = [[]]; }, true);
  document.addEventListener("keydown", e => {
    if (!e.isTrusted || e.ctrlKey || e.metaKey || e.altKey) return;
    const last = segs.length - 1;
    const commits = () => editorNow() || performance.now() <= armed || after !== null || kept(e.key);
    if (e.key === "Escape") segs = [[]];
    else if (ENDS(e.key)) commits() ? segs.push([]) : (segs[last] = []);  // on a selected cell: opens it, no value
    else if (e.key.length === 1) segs[last] = segs[last] && segs[last].concat([e.key]);
    else if (e.key !== "Shift") [segs[last], moved] = [null, {cell: null, at: performance.now()}];  // moved by keys
  }, true);
  const record = (input, cell) => {  // a value committed (Enter or Tab in a cell editor): checked once the runs end
    const seg = segs.length > 1 ? segs.shift() : segs[0];  // what was typed for this cell
    if (segs.length === 0 || seg === segs[0]) segs = [[]];
    const mine = seg && seg.join("").trim();
    const said = mine && Number.isFinite(num(mine)) ? mine : input.value.trim();
    const value = num(said);
    if (!cell || !said || !Number.isFinite(value)) return;  // not a number: the server says why
    typed = typed.filter(t => !(t.cell.name === cell.name && t.cell.row === cell.row && t.cell.col === cell.col));
    typed.push({cell, text: said.slice(0, 40), value, at: performance.now(), ran: false});
    if (typed.length === 1) setTimeout(check, 250);
  };
  const step = (cell, key) => {  // the cell a commit moves the selection to: the row below (Enter), or the next column
    for (const g of gridsOf(cell.name)) {
      const rows = Array.from(g.querySelectorAll("tbody tr"), r => r.children[0]?.textContent);
      const cols = Array.from(g.querySelectorAll(HEADS), h => h.textContent);
      const i = rows.indexOf(cell.row), j = cols.indexOf(cell.col);
      if (i < 0 || j < 0) continue;
      if (key === "Enter") return i + 1 < rows.length ? {...cell, row: rows[i + 1]} : cell;
      return j + 1 < cols.length ? {...cell, col: cols[j + 1]} : cell;
    }
    return null;
  };
  const giveBack = () => {  // a press: the keys kept for the cells below (typed before it) are named, not typed
    if (after !== null && after.some(k => !ENDS(k))) {
      lost(after, " was typed for the cells below, and you pressed elsewhere first: retype it there.", []);
    }
    after = null;
  };
  document.addEventListener("pointerdown", e => {  // pressing anywhere but a grid or its editor: moving on
    const t = e.target;
    giveBack();  // the keys after it belong to what was pressed (another cell's double-click, or elsewhere)
    [moved, keep] = [null, false];  // a press selects a cell of its own, or moves on
    if (t && t.closest && !t.closest(GRID) && !t.closest("#portal")) armed = 0;
  }, true);
  document.addEventListener("dblclick", e => {
    const grid = e.target.closest && e.target.closest(GRID);
    armed = grid ? performance.now() + 3000 : 0;
    [held, prefix, aim, moved, keep] = [[], [], grid ? aimAt(grid, e.clientY) : null, null, false];
    if (grid) {  // retyping: what was said before goes (not a note this double-click's own press just made)
      const now = performance.now();
      const old = n => now - Number(n.dataset.at || 0) > 700;
      document.querySelectorAll(".attention-note").forEach(n => old(n) && n.remove());
    }
    if (grid) missed.length = 0;
  }, true);
  document.addEventListener("keydown", e => {
    if (!e.isTrusted || e.ctrlKey || e.metaKey || e.altKey) return;
    if (after !== null && (ENDS(e.key) || e.key.length === 1)) {  // typed for the cells below: kept for them
      e.preventDefault();
      e.stopPropagation();
      return void after.push(e.key);
    }
    if (kept(e.key)) {
      e.preventDefault();  // the cell just committed is still closing: the key is for the cell below (it would reach
      e.stopPropagation();  // the closing editor, or open none), typed there once that editor has gone
      after = [e.key];
      return void handOn(after);
    }
    const onGrid = document.activeElement && document.activeElement.closest && document.activeElement.closest(GRID);
    if (performance.now() > armed && onGrid && e.key.length === 1 && !editorNow()) {
      [armed, prefix, held] = [performance.now() + 3000, [e.key], []];  // a key typed on a selected cell opens its
      return;  // editor with that key: the keys after it are kept until the editor is ready for them
    }
    if (performance.now() > armed) return;
    if (e.key === "Escape") [armed, held, prefix] = [0, [], []];  // cancelled: nothing typed is kept
    if (!ENDS(e.key) && e.key.length !== 1) return;  // Tab commits as Enter does (and moves right)
    const input = editorNow();
    if (input && !fresh && !held.length) return;  // an editor open and settled: it takes its keys
    // Armed by a double-click on a grid, the keys are the cell's wherever the focus still is: on a busy page the grid
    // took it late, and the first digit went into the box focused before (the sidebar's temperature), changing it.
    e.preventDefault();
    e.stopPropagation();
    held.push(e.key);
    if (held.length === 1) frames(1, flush);
  }, true);
  // An Enter or Tab that reaches a cell editor commits what it shows: the value is recorded for the check, and the
  // editor is closing. One kept above is not this editor's yet: it reaches it later (as a synthetic key), or never.
  // (Recorded at the kept key as well, a value was counted twice and the next cells' typing was misread: "3." and
  // "75" named as not landed, though 3.75 had.)
  document.addEventListener("keydown", e => {
    if (!ENDS(e.key) || e.defaultPrevented) return;
    const input = editorNow();
    if (!input || (e.target !== input && document.activeElement !== input)) return;
    const cell = editing || (unknown ? null : where(lastGrid));
    record(input, cell);
    // where the selection goes; unknown when this cell was (the grid's table then still shows a cell before it), or
    // when Shift turns the move back (up, or left)
    const to = cell && !e.shiftKey ? step(cell, e.key) || cell : null;
    [closing, moved, keep] = [input, {cell: to, at: performance.now()}, true];
  }, true);
})();
</script>"""

