"""Every widget's key, in one place: a constant for a widget drawn once, a function for a family of widgets.

A widget's key is how Streamlit keeps its value between runs and how a test finds it; a key that holds a number
(``version``, ``grids``) is renewed when that number moves, so the widget shows the state's value again. The values
are those the app has always used (tests and the browser find widgets by them). What a family of keys is used for
is kept here too.
"""

from __future__ import annotations

# --- the sidebar: the preset, its seed and size, the conventions, the share tools ---
SB_PRESET, SB_SEED, SB_RESET = "sb.preset", "sb.seed", "sb.reset"
SB_PROJECTION, SB_SOFTMAX, SB_SCALE, SB_SCALE_VALUE = "sb.projection", "sb.softmax", "sb.scale", "sb.scale_value"
SB_TEMPERATURE, SB_HEADS, SB_MASK, SB_PADDING, SB_DIGITS = (
    "sb.temperature",
    "sb.heads",
    "sb.mask",
    "sb.padding",
    "sb.digits",
)
SB_KV_HEADS, SB_POSITIONS = "sb.kv_heads", "sb.positions"
PRESET_FILE = "io.preset.file"  # the preset file uploader


def sb_blank(idx: int) -> str:
    """A blank's size box: 0 n, 1 d_model, 2 d_k."""
    return f"sb.blank.{idx}"


def sb_window(grids: int, window: int) -> str:
    """The sliding window's box: a fresh one whenever the window changes or a value is refused."""
    return f"sb.window.{grids}.{window}"


def share_download(kind: str) -> str:
    return f"io.dl.{kind}"


# --- the step pages: grids, imports, the explained cell, heatmaps, comparison, downloads ---
_GRID = "ed."  # the matrix grids' keys start with it


def grid(name: str, r0: int = 0, c0: int = 0) -> str:
    """A matrix's grid (the window of it from row ``r0``, column ``c0``). Never renewed: the grid keeps its page (and
    the values typed there) across reruns, and is told which numbers it shows (see
    :mod:`attention.ui.widgets.matrix_grid`)."""
    return f"{_GRID}{name}.{r0}.{c0}"


GAINS_GRID = "gains.grid"  # QK-norm's gains grid (the Q·K·V page), never renewed either


def view_window(page: str, name: str) -> str:
    """The window of matrix ``name``'s table on ``page`` (its boxes: :func:`window`)."""
    return f"view.{page}.{name}"


def edit_window(name: str, per: int) -> str:
    """The window of matrix ``name``'s grid, ``per`` columns at a time (its boxes: :func:`window`)."""
    return f"edwin.{name}.{per}"


def window(owner: str, side: str) -> str:
    """A window's first row (``side`` "r0") or column ("c0") box, of the table keyed ``owner``."""
    return f"{owner}.{side}"


def import_box(name: str, part: str) -> str:
    """The import box of matrix ``name``: "file", "text", "form", "apply", "resize" (its expander: :func:`expander`
    at "import.<name>")."""
    return f"imp.{name}.{part}"


def cell(page: str, part: str) -> str:
    """The explained cell's pickers on ``page``: "q", "k" or "head"."""
    return f"cell.{page}.{part}"


def heatmap(page: str, head: int | None = None) -> str:
    """The clickable heatmap on ``page`` (or of ``head``, 0-based, in the heads' grid); its selection picks a cell."""
    return f"hm.{page}" if head is None else f"hm.{page}.head{head + 1}"


def zoom(page: str, part: str) -> str:
    """The zoom window's "size", "r0" and "c0" boxes on ``page``."""
    return f"zoom.{page}.{part}"


def heads_window(page: str) -> str:
    return f"heads.window.{page}"


def heads_view(page: str) -> str:
    """The heads' heatmaps one to a row (the print layout sets them two to a row: its class is st-key-heads-view-…)."""
    return f"heads.view.{page}"


CMP_PIN, CMP_REPIN, CMP_SWAP, CMP_CLEAR = "cmp.pin", "cmp.repin", "cmp.swap", "cmp.clear"


def compare(page: str, name: str, part: str) -> str:
    """The comparison of matrix ``name`` with the pinned A on ``page``: "a" or "diff"."""
    return f"cmp.{page}.{name}.{part}"


def download(page: str, name: str) -> str:
    """A matrix's (or "zip": every matrix's) download button on ``page``."""
    return f"dl.{page}.{name}"


def reading_download(version: int) -> str:
    return f"dl.reading.{version}"


def chart_file(owner: str, ext: str) -> str:
    """A chart's file download (``ext`` "svg", "png" or "json"), or its menu ("menu"), of the chart named ``owner``."""
    return f"chartfile.{owner}.{ext}"


def tabs(place: str) -> str:
    """The lazy tab set at ``place``."""
    return f"tabs.{place}"


def expander(place: str) -> str:
    """The lazy expander at ``place``."""
    return f"open.{place}"


def cross_source(grids: int) -> str:
    """The source sentence box for cross-attention (renewed by ``grids`` after a refused sentence)."""
    return f"cross.source.{grids}"


def family_setting(name: str, grids: int, value: object) -> str:
    """A display setting's box: a fresh one whenever the setting changes or a value is refused."""
    return f"fam.{name}.{grids}.{value}"


SCREEN_ONLY = "screen-only"  # a keyed container's CSS class is "st-key-<key>": keys starting with this are not printed


def screen_only(name: str, panel: bool) -> str:
    """A container left out of the printed page (``panel``: with the whole column it sits in)."""
    return f"{SCREEN_ONLY}{'-panel' if panel else ''}-{name}"


# --- the Tokens and Weights pages' controls ---
TOK_NEAREST, TOK_POSITIONS, TOK_SHUFFLE = "tok.nearest", "tok.positions", "tok.shuffle"
W_O = "w.w_o"


def tok_embedding(version: int, grids: int) -> str:
    return f"tok.emb.{version}.{grids}"


def tok_embedding_seed(version: int, grids: int) -> str:
    return f"tok.embseed.{version}.{grids}"


def tok_identity(version: int) -> str:
    return f"tok.identity.{version}"


def tok_sentence(version: int) -> str:
    return f"tok.sentence.{version}"


def tok_d_model(version: int) -> str:
    return f"tok.dmodel.{version}"


def dim_box(dim: str, version: int, projection: str) -> str:
    """The box of a size (``dim`` such as "d_k") on the Weights page."""
    return f"w.{dim.replace('_', '')}.{version}.{projection}"


# --- the overview's guided path ---
TOUR, TOUR_SHOW, TOUR_HIDE = "tour", "tour.show", "tour.hide"

# --- the labs: challenges, the challenge form, Learn, Flash, why √d_k, the class board ---
CH_CHOICE, CH_UPLOAD, CH_RESTART, CH_STOP, CH_BACK, CH_SOLVE, CH_FORM = (
    "ch.choice",
    "ch.upload",
    "ch.restart",
    "ch.stop",
    "ch.back",
    "ch.solve",
    "ch.form",
)


def ch_start(where: str) -> str:
    return f"ch.start.{where}"


CF_KIND, CF_TITLE, CF_PRESET, CF_GOAL, CF_ARRAY, CF_ROW, CF_COL = (
    "cf.kind",
    "cf.title",
    "cf.preset",
    "cf.goal",
    "cf.array",
    "cf.row",
    "cf.col",
)
CF_OP, CF_VALUE, CF_EDIT, CF_MASK, CF_HINT, CF_DOWNLOAD, CF_TRY = (
    "cf.op",
    "cf.value",
    "cf.edit",
    "cf.mask",
    "cf.hint",
    "cf.download",
    "cf.try",
)

LEARN_TRAIN, LEARN_USE = "learn.train", "learn.use"


def learn_setting(name: str, grids: int) -> str:
    """A Learn page's setting box (renewed by ``grids`` after a refused value)."""
    return f"learn.{name}.{grids}"


def learn_snapshot(run: int) -> str:
    return f"learn.snap.{run}"


def flash_head(grids: int, head: int) -> str:
    return f"flash.head.{grids}.{head}"


def flash_go(label: str) -> str:
    return f"flash.go.{label}"


def flash_step(grids: int, k: int) -> str:
    return f"flash.step.{grids}.{k}"


def sqrt_tokens(n: int) -> str:
    return f"sqrt.n.{n}"


def sqrt_seeds(n: int) -> str:
    return f"sqrt.seeds.{n}"


BOARD_CSV = "board.csv"
BOARD_KEY, BOARD_TITLE, BOARD_SHOW = "board.key", "board.title", "board.show"  # the teacher's boxes
BOARD_CODE, BOARD_NAME = "board.join.code", "board.join.name"  # a student's boxes
BOARD_OPEN, BOARD_PICK, BOARD_JOIN = "board.open", "board.pick", "board.join"  # their forms
BOARD_SET, BOARD_SET_BUILTIN, BOARD_SET_LINK = "board.set", "board.set.builtin", "board.set.link"  # set a challenge
BOARD_MANAGE, BOARD_WHO, BOARD_RENAME = "board.manage", "board.who", "board.rename"  # rename or remove a student
BOARD_CLOSE = "board.close"  # close the class
BOARD_CLOSE_YES, BOARD_CLOSE_NO, BOARD_REOPEN = "board.close.yes", "board.close.no", "board.reopen"  # close: ask, undo
BOARD_LOCK = "board.lock"  # forget the teacher key in this browser
BOARD_UNDO, BOARD_YES, BOARD_NO = "board.undo", "board.remove.yes", "board.remove.no"  # remove: ask, undo
BOARD_LEAVE = "board.leave"  # a student's "Leave the class in this browser"
LEARN_STOP_CHALLENGE = "learn.stop_challenge"  # the Learn page's "Stop the challenge" (its numbers' locks)

# --- a model's head on the step pages ---
HEAD_PICK, HEAD_RESTORE, HEAD_ZERO, HEAD_MEAN = (
    "model_head.pick",
    "model_head.restore",
    "model_head.zero",
    "model_head.mean",
)

# --- the model pages: Every head, Watch it learn, Generate, First token ---
INSIDE_MODEL, INSIDE_LAYER_SHOWN = "inside.w.model", "inside.w.layer_shown"
INSIDE_SEQUENCE, INSIDE_TYPED, INSIDE_POSITION, INSIDE_HOW = (
    "inside.w.sequence",
    "inside.w.typed",
    "inside.w.position",
    "inside.w.how",
)
INSIDE_REPEAT, INSIDE_RESTORE_ALL, INSIDE_OVERVIEW = "inside.repeat", "inside.restore_all", "inside.overview"
INSIDE_BANNER_WENT = "inside.banner_went"  # the text's refusal, drawn above the fragments, was taken away
INSIDE_ANSWERING = "inside.answering"  # the fragment of the heads and the predictions, rerun by name
INSIDE_EVERY = "open.inside.every_position"  # the expander of every position's prediction


def inside_upload(uploads: int) -> str:
    """The model uploader: a new one after each upload, so the files sent do not linger."""
    return f"inside.w.upload.{uploads}"


def inside_export(kind: str) -> str:
    """Every head's weights as one file: "npz" or "zip"."""
    return f"inside.export.{kind}"


def inside_head(what: str, layer: int, head: int) -> str:
    """The chosen head's "toggle" (ablate or restore) or "open" (on the step pages) on Every head; "push" its box."""
    return f"inside.{what}.{layer}.{head}"


def scores_chart(owner: str, kind: str) -> str:
    """The grid of every head's ``kind`` score (the chart named ``owner``)."""
    return f"{owner}.{kind}"


def scores_table(owner: str) -> str:
    """The expander of every head's role and score as a table, under the grids named ``owner``."""
    return f"open.{owner}.table"


WATCH_SNAPSHOT = "inside.w.snapshot"
WATCH_TRAIN, WATCH_CANCEL, WATCH_OPEN = "inside.learn.train", "inside.learn.cancel", "inside.learn.open"


def watch_chart(layer: int, head: int) -> str:
    return f"inside.learn.chart.{layer}.{head}"


GEN_KEEP, GEN_LAYER, GEN_MANY = "inside.w.gen.keep", "inside.w.gen.layer", "inside.w.gen.many"
GEN_NEXT, GEN_MORE, GEN_END, GEN_AGAIN = (
    "inside.gen.b.next",
    "inside.gen.b.many",
    "inside.gen.b.end",
    "inside.gen.b.again",
)
GEN_TOP, GEN_NEWROW, GEN_HISTORY = "inside.gen.top", "inside.gen.newrow", "inside.gen.history"


def gen_chart(which: str) -> str:
    """A Generate chart: "q", "row" or "cache"."""
    return f"inside.gen.chart.{which}"


SINK_GRID, SINK_HEAD = "inside.sink.grid", "inside.sink.head"

# --- the logit lens and each head's share (Logit lens, Attribution) ---
READOUT_POSITION, READOUT_TOKEN = "inside.w.readout.position", "inside.w.readout.token"
READOUT_PICK, READOUT_OPEN = "inside.w.readout.pick", "inside.readout.open"  # a head to open, without the mouse
READOUT_HEADS, READOUT_MLPS, LENS_LINE = "inside.readout.heads", "inside.readout.mlps", "inside.lens.line"
ACROSS_KEY, ACROSS_QUERY = "inside.w.across.key", "inside.w.across.query"  # one token across layers: its choices
FIND_TEXT, FIND_PICK = "inside.w.find.text", "inside.w.find.pick"  # a position found by its token
INSIDE_QK_HEAD = "inside.w.qk_head"  # the head whose q and k are shown step by step
INSIDE_HEAD_SHOWN = "inside.w.head_shown"  # Every head's chosen head, whose controls are drawn
INSIDE_ONE_LAYER = "inside.one_layer"  # Every head's fragment of a wide model's layer (its chooser and chart)
INSIDE_ZOOM_ROWS, INSIDE_ZOOM_KEYS = "inside.w.zoom_rows", "inside.w.zoom_keys"  # Every head's window, as typed
INSIDE_ZOOM_CHART, INSIDE_ZOOM_PART = "inside.zoom_chart", "inside.zoom"  # the window's cells; its fragment


INSIDE_LAYER = "inside.layer.chart"  # the chosen layer's chart on a wide model: one key for every layer


def inside_layer(what: str, layer: int) -> str:
    """A layer's "chart" (every head of it, one picture) or its chart's "files" on Every head."""
    return f"inside.layer.{what}.{layer}"

# --- the Routes page, and what a part pushes toward (Routes, Every head, Attribution) ---
ROUTES_THRESHOLD, ROUTES_GRAPH = "inside.w.routes.threshold", "inside.routes.graph"
ROUTES_LINES = "inside.routes.lines"  # the strongest routes, each one line
ROUTES_PICK, ROUTES_OPEN = "inside.w.routes.pick", "inside.routes.open"  # a head's edge to open, without the mouse
ROUTES_PART, PUSH_MLP = "inside.w.routes.part", "inside.w.push.mlp"  # a part of the graph, an MLP, read as tokens

# --- the Patching page ---
PATCH_PAIR, PATCH_CLEAN, PATCH_CORRUPT, PATCH_USE = (
    "inside.w.patch.pair",
    "inside.w.patch.clean",
    "inside.w.patch.corrupt",
    "inside.patch.use",
)
PATCH_FORM = "inside.patch.form"
PATCH_ANSWER, PATCH_WRONG = "inside.w.patch.answer", "inside.w.patch.wrong"
PATCH_RUN, PATCH_CANCEL = "inside.patch.run", "inside.patch.cancel"
PATCH_HEADS, PATCH_STREAMS = "inside.patch.heads", "inside.patch.streams"
PATCH_SCOPE, PATCH_LAYERS = "inside.w.patch.scope", "inside.w.patch.layers"  # what the exact patching covers
PATCH_EST_HEADS, PATCH_EST_STREAMS = "inside.patch.est.heads", "inside.patch.est.streams"  # the estimate's heatmaps
PATCH_SIDE = "inside.patch.side"  # the top heads: the estimate beside the exact share

# --- the KV cache page ---
KV_TEXT, KV_POLICY = "inside.w.kv.text", "inside.w.kv.policy"  # the text studied, the eviction policy
KV_UNIT, KV_BUDGET = "inside.w.kv.unit", "inside.w.kv.budget"  # the budget's unit (keys or a share), the budget typed
KV_RUN, KV_CANCEL, KV_EXTRA = "inside.kv.run", "inside.kv.cancel", "inside.kv.extra"  # study; stop; one more budget
KV_SINKS, KV_RETRIEVAL = "inside.kv.sinks", "inside.kv.retrieval"  # the sink's heatmaps, the retrieval scores
KV_KEPT, KV_CURVE = "inside.kv.kept", "inside.kv.curve"  # the keys each head keeps, the loss against budget


def kv_sinks(k: int) -> str:
    """The KV cache page's k-th heatmap of the sink (0: position 64)."""
    return f"{KV_SINKS}.{k}"


def kv_open(layer: int, head: int) -> str:
    """The KV cache page's button that opens a retrieval head on the step pages."""
    return f"inside.kv.open.{layer}.{head}"
