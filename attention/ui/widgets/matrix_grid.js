// The matrix editor's page side (attention/ui/widgets/matrix_grid.py draws it). The page owns its keystrokes: a
// typed value is kept here as pending, with a sequence number, sent to the server, and shown over whatever numbers
// arrive until the server's data echoes that number (data.echo). A rerun can then never take a value away.
// Pending values live on the window, by grid key, so a grid drawn afresh (another page, a remount) still has them.

const PID = (window.__mgridPid ||= Math.random().toString(36).slice(2, 12));  // this page load
const PENDING = (window.__mgridPending ||= new Map());  // grid key -> {ver, cells: Map("r,c" -> {text, seq})}
const RESEND_MS = 1500;  // a value not echoed by then is sent again (a coalesced rerun can drop a trigger)
const MAX_PASTE_CHARS = 200000;  // bound before splitting a pasted block

const nextSeq = () => (window.__mgridSeq = (window.__mgridSeq || 0) + 1);
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

function pendingOf(key, ver) {
  let p = PENDING.get(key);
  if (!p || p.ver !== ver) {
    p = { ver, cells: new Map() };
    PENDING.set(key, p);
  }
  return p;
}

class Grid {
  constructor(host) {
    this.host = host;
    this.root = el("div", "mgrid");
    this.scroll = el("div", "mgrid-scroll");
    this.status = el("div", "mgrid-status");
    this.status.setAttribute("aria-live", "polite");
    this.root.append(this.scroll, this.status);
    host.append(this.root);
    this.sel = { r: 0, c: 0 };
    this.anchor = null;  // the other corner of a selected block (Shift + arrows or click)
    this.editing = null;  // {r, c, input, before}
    this.shape = "";
    this.timer = null;
    this.note = "";
    this.root.addEventListener("keydown", e => this.onKey(e));
    this.root.__grid = this;  // the page's copy and paste go to the grid holding the focus (see the end)
    this.root.addEventListener("mousedown", e => this.onMouse(e));
    this.root.addEventListener("dblclick", e => {
      const td = e.target.closest("td[data-r]");
      if (td && !this.editing) this.open(+td.dataset.r, +td.dataset.c, null);
    });
  }

  update(data, send) {
    this.data = data;
    this.send = send;
    const shape = JSON.stringify([data.key, data.rows, data.cols]);
    if (shape !== this.shape) this.build(shape);
    const p = PENDING.get(data.key);
    const echo = data.echo;
    const echoed = v => !!(echo && echo[0] === PID && v.seq <= echo[1]);
    if (p && p.ver !== data.ver) {  // typed over numbers no longer shown: the server named what it saw; here the rest
      PENDING.delete(data.key);
      const unseen = [...p.cells.values()].filter(v => !echoed(v)).map(v => `${v.where} = ${v.text}`);
      if (unseen.length) this.note = `Not applied: ${unseen.join("; ")}, typed over numbers no longer shown ` +
        `(another preset, head or option came first). Type ${unseen.length > 1 ? "them" : "it"} again.`;
    } else if (p) {
      for (const [rc, v] of p.cells) if (echoed(v)) p.cells.delete(rc);
    }
    this.paint();
    this.schedule();
  }

  build(shape) {
    const d = this.data;
    const focused = this.root.contains(document.activeElement);
    const ed = this.editing;  // an open cell editor stays open, its text kept, when the grid is relabelled
    const kept = ed && this.shape && JSON.parse(this.shape)[0] === d.key && ed.r < d.rows.length && ed.c < d.cols.length
      ? { ...ed, from: ed.input.selectionStart, to: ed.input.selectionEnd } : null;
    this.shape = shape;
    this.editing = null;
    const table = el("table", "mgrid-table");
    table.setAttribute("role", "grid");
    table.setAttribute("aria-label", `${d.label}: ${d.rows.length} rows × ${d.cols.length} columns`);
    if (d.locked) table.setAttribute("aria-readonly", "true");
    const head = el("tr");
    head.setAttribute("role", "row");
    const corner = el("th", "mgrid-corner", d.corner || "");
    corner.setAttribute("role", "columnheader");
    head.append(corner);
    d.cols.forEach(c => {
      const th = el("th", "mgrid-col", c);
      th.setAttribute("role", "columnheader");
      th.setAttribute("scope", "col");
      head.append(th);
    });
    const thead = el("thead");
    thead.append(head);
    const tbody = el("tbody");
    this.cells = d.rows.map((label, r) => {
      const tr = el("tr");
      tr.setAttribute("role", "row");
      const th = el("th", "mgrid-row", label);
      th.setAttribute("role", "rowheader");
      th.setAttribute("scope", "row");
      tr.append(th);
      const row = d.cols.map((col, c) => {
        const td = el("td", "mgrid-cell");
        td.setAttribute("role", "gridcell");
        td.dataset.r = r;
        td.dataset.c = c;
        td.tabIndex = -1;
        tr.append(td);
        return td;
      });
      tbody.append(tr);
      return row;
    });
    table.append(thead, tbody);
    this.scroll.replaceChildren(table);
    this.sel = { r: Math.min(this.sel.r, d.rows.length - 1), c: Math.min(this.sel.c, d.cols.length - 1) };
    this.anchor = null;
    if (kept) return this.reopen(kept);
    this.select(this.sel.r, this.sel.c, focused);
  }

  reopen(ed) {  // the cell editor carried into a table built afresh (its rows or columns relabelled): text and caret
    const td = this.cells[ed.r][ed.c];
    this.select(ed.r, ed.c, false);
    td.style.width = getComputedStyle(td).width;
    ed.input.setAttribute("aria-label", `${this.data.label} ${this.data.rows[ed.r]} · ${this.data.cols[ed.c]}`);
    td.replaceChildren(ed.input);
    this.editing = { r: ed.r, c: ed.c, input: ed.input, before: ed.before };
    ed.input.focus({ preventScroll: true });
    ed.input.setSelectionRange(ed.from, ed.to);
  }

  text(r, c) {  // what a cell shows: its pending value, else the server's
    const p = PENDING.get(this.data.key);
    const v = p && p.ver === this.data.ver && p.cells.get(`${r},${c}`);
    return v ? v.text : this.data.shown[r][c];
  }

  paint() {
    const d = this.data;
    const p = PENDING.get(d.key);
    const changed = new Set((d.changed || []).map(([r, c]) => `${r},${c}`));
    this.cells.forEach((row, r) => row.forEach((td, c) => {
      const rc = `${r},${c}`;
      const waiting = !!(p && p.cells.has(rc));
      const mark = changed.has(rc);
      td.classList.toggle("pending", waiting);
      td.classList.toggle("changed", mark);
      td.classList.toggle("locked", !!d.locked);
      td.setAttribute("aria-readonly", d.locked ? "true" : "false");
      const more = (mark ? ", changed from the preset" : "") + (waiting ? ", sending" : "");
      td.setAttribute("aria-label", `${d.label} ${d.rows[r]} · ${d.cols[c]}${more}`);
      if (this.editing && this.editing.r === r && this.editing.c === c) return;
      const t = this.text(r, c);
      if (td.textContent !== t) td.textContent = t;
    }));
    const n = p ? p.cells.size : 0;
    this.status.textContent = this.note || (n ? `Sending ${n} edit${n > 1 ? "s" : ""}…` : "");
    this.root.dataset.pending = String(n);
  }

  schedule() {  // send again what the server has not echoed yet
    clearTimeout(this.timer);
    const p = PENDING.get(this.data.key);
    if (p && p.cells.size) this.timer = setTimeout(() => this.flush(), RESEND_MS);
  }

  flush() {  // every pending value of this grid, with the last sequence number: a later send carries the earlier
    const d = this.data;
    const p = PENDING.get(d.key);
    if (!p || !p.cells.size || !this.root.isConnected) return;
    const edited = {};
    let seq = 0;
    for (const [rc, v] of p.cells) {
      const [r, c] = rc.split(",").map(Number);
      (edited[r] ||= {})[d.cols[c]] = v.text;
      seq = Math.max(seq, v.seq);
    }
    this.send("edit", { pid: PID, seq, ver: d.ver, edited_rows: edited });
    this.schedule();
  }

  commit(values) {  // [[r, c, text]]: kept as pending, shown at once, sent
    if (this.data.locked) return this.say(this.data.lockedNote);
    const p = pendingOf(this.data.key, this.data.ver);
    let any = false;
    for (const [r, c, text] of values) {
      if (r >= this.data.rows.length || c >= this.data.cols.length) continue;
      const where = `${this.data.label} ${this.data.rows[r]} · ${this.data.cols[c]}`;  // named if never applied
      p.cells.set(`${r},${c}`, { text, seq: nextSeq(), where });
      any = true;
    }
    if (!any) return;
    this.note = "";
    this.paint();
    this.flush();
  }

  say(note) {
    this.note = note || "";
    this.paint();
  }

  select(r, c, focus = true, extend = false) {
    const d = this.data;
    r = Math.max(0, Math.min(d.rows.length - 1, r));
    c = Math.max(0, Math.min(d.cols.length - 1, c));
    this.anchor = extend ? this.anchor || { ...this.sel } : null;
    this.sel = { r, c };
    const [r0, r1, c0, c1] = this.block();
    this.cells.forEach((row, i) => row.forEach((td, j) => {
      td.tabIndex = i === r && j === c ? 0 : -1;
      td.classList.toggle("in-block", !!this.anchor && i >= r0 && i <= r1 && j >= c0 && j <= c1);
      td.setAttribute("aria-selected", i === r && j === c ? "true" : "false");
    }));
    const td = this.cells[r][c];
    if (focus) {
      td.focus({ preventScroll: true });
      td.scrollIntoView({ block: "nearest", inline: "nearest" });
    }
  }

  block() {
    const a = this.anchor || this.sel, b = this.sel;
    return [Math.min(a.r, b.r), Math.max(a.r, b.r), Math.min(a.c, b.c), Math.max(a.c, b.c)];
  }

  open(r, c, typed) {  // the cell editor: with the key typed (replacing the value), else the value selected
    if (this.data.locked) return this.say(this.data.lockedNote);
    this.select(r, c, false);
    const td = this.cells[r][c];
    const before = this.text(r, c);
    const input = el("input", "mgrid-input");
    input.type = "text";
    input.size = 1;  // the cell's width, not the input's own: the column does not jump as the editor opens
    td.style.width = getComputedStyle(td).width;
    input.setAttribute("aria-label", td.getAttribute("aria-label"));
    input.value = typed === null ? before : typed;
    this.editing = { r, c, input, before };
    td.replaceChildren(input);
    input.focus({ preventScroll: true });
    if (typed === null) input.select();
    else input.setSelectionRange(input.value.length, input.value.length);
    input.addEventListener("blur", () => this.close(true));
  }

  close(keep) {  // end the cell editor: commit its text when it changed (Enter, Tab, a click elsewhere)
    const ed = this.editing;
    if (!ed) return;
    this.editing = null;
    const text = ed.input.value.trim();
    ed.input.remove();
    this.cells[ed.r][ed.c].style.width = "";
    this.cells[ed.r][ed.c].textContent = this.text(ed.r, ed.c);
    if (keep && text !== ed.before) this.commit([[ed.r, ed.c, text]]);
  }

  move(dr, dc, extend = false) {
    const d = this.data;
    let { r, c } = this.sel;
    r += dr;
    c += dc;
    if (dc && !dr && !extend) {  // Tab past a row's end goes on to the next row (and back)
      if (c >= d.cols.length && r < d.rows.length - 1) [r, c] = [r + 1, 0];
      if (c < 0 && r > 0) [r, c] = [r - 1, d.cols.length - 1];
    }
    this.select(r, c, true, extend);
  }

  onKey(e) {
    const k = e.key;
    if (this.editing) {
      if (k === "Enter" || k === "Tab") {
        e.preventDefault();
        this.close(true);
        const back = e.shiftKey ? -1 : 1;
        return k === "Enter" ? this.move(back, 0) : this.move(0, back);
      }
      if (k === "Escape") {
        e.preventDefault();
        e.stopPropagation();
        this.close(false);
        this.select(this.sel.r, this.sel.c);
      }
      return;  // the arrows and the rest go to the cell editor
    }
    if (!e.target.closest("td[data-r]")) return;
    const arrows = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    if (arrows[k]) {
      e.preventDefault();
      return this.move(...arrows[k], e.shiftKey);
    }
    if (k === "Tab") {
      const { r, c } = this.sel, d = this.data;
      const edge = e.shiftKey ? r === 0 && c === 0 : r === d.rows.length - 1 && c === d.cols.length - 1;
      if (edge) return;  // the focus leaves the grid
      e.preventDefault();
      return this.move(0, e.shiftKey ? -1 : 1);
    }
    if (k === "Enter" && e.shiftKey) {
      e.preventDefault();
      return this.move(-1, 0);
    }
    if (k === "Enter" || k === "F2") {
      e.preventDefault();
      return this.open(this.sel.r, this.sel.c, null);
    }
    if (k === "Escape") return this.select(this.sel.r, this.sel.c);
    if ((e.ctrlKey || e.metaKey) && (k === "c" || k === "C")) return;  // the copy event
    if (k === "Backspace" || k === "Delete") {
      e.preventDefault();
      return this.open(this.sel.r, this.sel.c, "");
    }
    if (k.length === 1 && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      this.open(this.sel.r, this.sel.c, k);
    }
  }

  onMouse(e) {
    const td = e.target.closest("td[data-r]");
    if (!td || e.target.closest("input")) return;
    if (this.editing) this.close(true);
    e.preventDefault();
    this.select(+td.dataset.r, +td.dataset.c, true, e.shiftKey);
  }

  onPaste(e) {  // a tab-separated block (from a spreadsheet) at the selected cell
    const raw = (e.clipboardData && e.clipboardData.getData("text/plain")) || "";
    if (this.editing && !/[\t\n]/.test(raw.trim())) return;  // one value: into the cell editor as usual
    e.preventDefault();
    if (raw.length > MAX_PASTE_CHARS) return this.say(`The pasted text is ${raw.length} characters long; at most ${MAX_PASTE_CHARS} are pasted here.`);
    if (this.editing) this.close(false);
    const lines = raw.replace(/\r\n?/g, "\n").replace(/\n+$/, "").split("\n");
    const d = this.data, { r, c } = this.sel, values = [];
    let outside = 0;
    lines.forEach((line, i) => line.split("\t").forEach((t, j) => {
      if (r + i < d.rows.length && c + j < d.cols.length) values.push([r + i, c + j, t.trim()]);
      else outside += 1;
    }));
    this.commit(values);
    if (outside) this.say(`${outside} pasted value${outside > 1 ? "s" : ""} fell outside the grid and were not used.`);
  }

  onCopy(e) {  // the selected block as tab-separated text, every digit of the numbers
    if (this.editing) return;
    const [r0, r1, c0, c1] = this.block(), d = this.data, rows = [];
    for (let r = r0; r <= r1; r++) {
      const row = [];
      for (let c = c0; c <= c1; c++) {
        const p = PENDING.get(d.key), v = p && p.cells.get(`${r},${c}`);
        row.push(v ? v.text : d.exact[r][c]);
      }
      rows.push(row.join("\t"));
    }
    e.clipboardData.setData("text/plain", rows.join("\n"));
    e.preventDefault();
  }
}

// A copy or paste with no text selected is sent to the page's body, not to the focused cell: find its grid here.
if (!window.__mgridClipboard) {
  window.__mgridClipboard = true;
  const gridOf = () => {
    const root = document.activeElement && document.activeElement.closest && document.activeElement.closest(".mgrid");
    return root && root.__grid;
  };
  document.addEventListener("paste", e => gridOf() && gridOf().onPaste(e));
  document.addEventListener("copy", e => gridOf() && gridOf().onCopy(e));
}

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const host = parentElement;
  const grid = (host.__mgrid ||= new Grid(host));
  grid.update(data, setTriggerValue);
}
