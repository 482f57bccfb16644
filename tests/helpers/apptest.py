"""Helpers for AppTest: run a page, find its matrices, edit a grid cell through the editor protocol."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
from streamlit.components.v2.bidi_component.main import _make_trigger_id as make_trigger_id
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest

from attention import charts
from attention.ui.app.specs import INSIDE, LABS, OVERVIEW, STEPS
from attention.ui.core import keys
from attention.ui.inputs.editors import editor_key
from tests.helpers import ROOT

PAGES = {"overview": OVERVIEW} | {page.key: page.file for page in (*STEPS.values(), *LABS.values(), *INSIDE.values())}
TIMEOUT = 60


def app(page: str = "overview", query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / PAGES[page]), default_timeout=TIMEOUT)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    return at.run()


def journey(page: str = "overview", query: dict[str, str] | None = None) -> AppTest:
    """Open the app at its entry point (as a browser does), then switch to ``page``."""
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=TIMEOUT)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at = at.run()
    return at if page == "overview" else goto(at, page)


def address(at: AppTest) -> dict[str, str]:
    """The address bar of ``at``'s browser, as a reload would send it (each parameter's one value)."""
    return {k: (v[0] if isinstance(v, list) else v) for k, v in dict(at.query_params).items()}


def goto(at: AppTest, page: str) -> AppTest:
    """Switch page within the session, as the sidebar navigation does ."""
    return at.switch_page(str(ROOT / PAGES[page])).run()


def session(at: AppTest):
    return at.session_state["attention_session"]


def put_inside(at: AppTest, **changes: object) -> None:
    """Change the model pages' state (the Session's ``inside`` record) as their writer would, before the next run."""
    s = session(at)
    s.inside = dataclasses.replace(s.inside, **changes)


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def shown(markdown: str) -> str:
    """The text a person sees for a Markdown source string: backslash escapes (how user text is kept literal,
    see attention/ui/core/text.py) removed."""
    return re.sub(r"\\([!-/:-@[-`{-~])", r"\1", markdown)


def texts(elements) -> list[str]:
    """What a person reads in these elements (errors, warnings, markdown...)."""
    return [shown(e.value) for e in elements]


def badges(at: AppTest) -> list[tuple[str, str]]:
    """(label, hover text) of every st.badge on the page."""
    out = []
    for m in at.markdown:
        found = re.fullmatch(r":[a-z]+-badge\[(?::material/[a-z_]+: )?(.*)\]", m.value)
        if found:
            out.append((found.group(1), shown(m.proto.help)))
    return out


def errors(at: AppTest) -> list[str]:
    return texts(at.error)


def open_views(at: AppTest, *starts: str) -> AppTest:
    """Open, as a learner does, every lazy expander of the page whose place starts with one of ``starts`` (default:
    a step page's views and result tables, "view." and "table."; "downloads", "import." for the others) that is still
    closed, so what it holds is drawn. Whether a place is open is kept in the session, so it stays open on any page."""
    starts = starts or ("view.", "table.")
    for box in list(at.expander):
        place = box.proto.id.split("-open.", 1)[1] if "-open." in box.proto.id else ""
        if place.startswith(starts) and session(at).tabs.get(place) != "open":
            at = open_expander(at, place)
    return at


def open_tables(at: AppTest) -> AppTest:
    """Open every result table a step page keeps closed beside its heatmap (places "table.<name>")."""
    return open_views(at, "table.")


def frame_by_shape(at: AppTest, shape: tuple[int, int], index: int = 0) -> np.ndarray:
    """The index-th dataframe element of the given shape, as floats (the page's result tables opened first: a step
    page keeps them closed beside its heatmap; opened, each comes before the input grids, as it always did). A table
    too wide for its column is sent as blocks of whole columns, one under the other: consecutive frames of the same
    rows whose widths add up to the shape's are put back together."""
    frames = [df.value for df in open_tables(at).dataframe]
    found = _tables_of_shape(frames, shape)
    assert len(found) > index, f"no dataframe of shape {shape}; have {[getattr(d, 'shape', None) for d in frames]}"
    return found[index]


def _tables_of_shape(frames: list, shape: tuple[int, int]) -> list[np.ndarray]:
    """Each frame of ``shape``, or run of consecutive column blocks making one, in page order, as floats."""
    out, i = [], 0
    while i < len(frames):
        width, j = 0, i
        while j < len(frames) and getattr(frames[j], "shape", (None, 0))[0] == shape[0] and width < shape[1]:
            width, j = width + frames[j].shape[1], j + 1
        if j > i and width == shape[1]:
            out.append(np.hstack([frames[k].to_numpy(dtype=float) for k in range(i, j)]))
            i = j
        else:
            i += 1
    return out


def drawn_cells(chart) -> list[list[dict]]:
    """The rows each view of a drawn Vega-Lite chart holds: inline ``data.values`` anywhere in its spec (the app's
    cell-by-cell heatmaps), the chart's own Arrow data and Arrow datasets (Altair charts), one list of row dicts per
    data source."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    found: list[list[dict]] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            data = node.get("data")
            if isinstance(data, dict) and isinstance(data.get("values"), list):
                found.append(data["values"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(json.loads(chart.proto.spec))
    if chart.proto.data.data:  # the chart's own data (st.vega_lite_chart(data, spec)): a single heatmap's cells
        found.append(convert_arrow_bytes_to_pandas_df(chart.proto.data.data).to_dict("records"))
    found += [convert_arrow_bytes_to_pandas_df(d.data.data).to_dict("records") for d in chart.proto.datasets]
    return found


_SENT = {"seq": 0}  # the sequence numbers this test process's "page" gives its edits


def grid_edit(at: AppTest, key: str, payload: object) -> AppTest:
    """Send edits from the matrix editor ``key`` (attention.ui.widgets.matrix_grid) the way its page does: as the
    component's "edit" trigger in the next run's widget states, so Streamlit calls the editor's callback (or a data
    editor's payload, the mask's tick grid, as its widget value). A dict payload gets what the page adds to its
    pending values when it has not got them: the page load's id, the next sequence number and the numbers the grid
    was drawn over (the data the grid was given)."""
    found = [e for e in at.get("bidi_component") if e.proto.id.endswith(f"-{key}")]
    if not found:  # a data editor (the mask's tick grid): its payload is the widget's value
        editors = [e for e in at.dataframe if e.key == key]
        assert editors, f"no matrix editor or data editor with key {key!r}"
        states = at._tree.get_widget_states()
        states.widgets.append(WidgetState(id=editors[0].proto.id, string_value=json.dumps(payload)))
        return at._run(states)
    if isinstance(payload, dict):
        _SENT["seq"] += 1
        drawn = json.loads(found[0].proto.json).get("ver", "")
        payload = {"pid": "apptest", "seq": _SENT["seq"], "ver": drawn, **payload}
    trigger = make_trigger_id(found[0].proto.id, "events")
    states = at._tree.get_widget_states()
    states.widgets.append(WidgetState(id=trigger, json_trigger_value=json.dumps([{"event": "edit", "value": payload}])))
    return at._run(states)


def matrix_grids(at: AppTest) -> dict[str, dict]:
    """The matrix editors drawn, by key, in page order: each with the data it was drawn with."""
    return {e.proto.id.split("-", 2)[-1]: json.loads(e.proto.json) for e in at.get("bidi_component")}


def grid_numbers(at: AppTest, key: str) -> np.ndarray:
    """The numbers a matrix editor shows (as rounded for it)."""
    return np.array(grid_data(at, key)["shown"], dtype=float)


def grid_data(at: AppTest, key: str) -> dict:
    """The data the matrix editor ``key`` was drawn with: its cells as shown, the cells marked changed, its echo."""
    found = [e for e in at.get("bidi_component") if e.proto.id.endswith(f"-{key}")]
    assert found, f"no matrix editor with key {key!r}"
    return json.loads(found[0].proto.json)


def _tab_containers(at: AppTest) -> dict[str, object]:
    found: dict[str, object] = {}

    def walk(node: object) -> None:
        for child in getattr(node, "children", {}).values():
            if getattr(child, "type", "") == "tab_container":
                found[child.proto.tab_container.id.rsplit("-", 1)[-1]] = child
            walk(child)

    walk(at._tree)
    return found


def choose_tab(at: AppTest, place: str, label: str) -> AppTest:
    """Open tab ``label`` of the lazy tab set at ``place`` (widgets.open_tab) the way the browser does: the tab
    container's new value in the next run's widget states, so its on_change callback runs."""
    block = _tab_containers(at).get(f"tabs.{place}")
    assert block is not None, f"no tab set tabs.{place}; have {list(_tab_containers(at))}"
    assert label in [t.label for t in block.children.values()], label
    states = at._tree.get_widget_states()
    states.widgets.append(WidgetState(id=block.proto.tab_container.id, string_value=label))
    return at._run(states)


def open_expander(at: AppTest, place: str) -> AppTest:
    """Open the lazy expander at ``place`` (widgets.open_expander) the way the browser does, so its callback runs."""
    found = [e for e in at.expander if e.proto.id.endswith(f"-open.{place}")]
    assert found, f"no expander open.{place}"
    states = at._tree.get_widget_states()
    states.widgets.append(WidgetState(id=found[0].proto.id, bool_value=True))
    return at._run(states)


def conventions(at: AppTest) -> AppTest:
    """Open the sidebar's "Heads, mask and conventions" (closed at first: its boxes are only built while open)."""
    if any(w.key == "sb.mask" for w in at.sidebar.selectbox):
        return at
    return open_expander(at, "conventions")


def edit_cells(
    at: AppTest, name: str, edited_rows: dict, page_window: tuple[int, int] = (0, 0), *, raw: bool = False
) -> AppTest:
    """Edit cells of the matrix editor ``name``: ``{row: {column label: value}}``. Numbers are sent as the text the
    browser's editor sends for its cells (``raw=True`` sends the values as given, as a hostile client could)."""
    if not raw:
        edited_rows = {
            r: {c: (v if v is None or isinstance(v, str) else str(v)) for c, v in cells.items()}
            for r, cells in edited_rows.items()
        }
    key = editor_key(name, session(at), *page_window)
    drawn = [e.proto.id for e in at.get("bidi_component")]
    if not any(i.endswith(f"-{key}") for i in drawn) and "tabs.inputs" in _tab_containers(at):
        at = choose_tab(at, "inputs", name)  # a result page draws the open input tab's editor only
    return grid_edit(at, key, {"edited_rows": edited_rows, "added_rows": [], "deleted_rows": []})


def edit_cell(at: AppTest, name: str, row: int, col_label: str, value: object) -> AppTest:
    """Edit one cell of the matrix editor ``name`` the way the browser grid does."""
    return edit_cells(at, name, {row: {col_label: value}})


def select(at: AppTest, key: str, value: object) -> AppTest:
    return at.selectbox(key=key).set_value(value).run()


def layer_charts(at: AppTest) -> list:
    """Every head's charts of a layer's heads (one each layer drawn: a plot a head), in order."""
    return [c for c in at.get("vega_lite_chart") if '"vconcat"' in c.proto.spec]


def head_plots(at: AppTest) -> list[tuple[str, str, np.ndarray]]:
    """Every head drawn on Every head, in order: its title, subtitle, and the (n, n) weights its layer's chart sent to
    the browser (NaN where masked), read from the chart's cells (head, row, col, value, masked)."""
    import pyarrow as pa

    out = []
    for chart in layer_charts(at):
        spec = json.loads(chart.proto.spec)
        named = {d.name: pa.ipc.open_stream(d.data.data).read_pandas() for d in chart.proto.datasets}  # Arrow
        cells = named[charts.CELLS]
        pictures = named[charts.PICTURES].set_index("panel")  # each plot's title and subtitle: data, not spec
        for k, plot in enumerate(p for row in spec["vconcat"] for p in row["hconcat"]):
            assert f"data('{charts.PICTURES}')[{k}]" in plot["title"]["text"]["expr"]  # the title: the table's
            title = pictures.loc[k, "head"]
            mine = cells[cells["head"] == title]
            n = int(mine["row"].max())
            values = np.full((n, n), np.nan)
            live = ~mine["masked"].to_numpy(dtype=bool)
            values[mine["row"].to_numpy()[live] - 1, mine["col"].to_numpy()[live] - 1] = mine["value"].to_numpy(
                dtype=float
            )[live]
            out.append((title, pictures.loc[k, "subtitle"] if "subtitle" in plot["title"] else "", values))
    return out


def head_texts(at: AppTest, heads, kind: str = "line") -> list[str]:
    """For each head (layer, head), chosen in turn as a learner does: its controls' line (``kind`` "line": its name,
    role and three scores, bold marks removed) or its caption starting ``kind``."""
    out = []
    for layer, head in heads:
        at = select(at, keys.INSIDE_HEAD_SHOWN, (layer, head))
        if kind == "line":
            out += [m.replace("**", "") for m in texts(at.markdown) if m.startswith(f"**layer {layer + 1} · head")]
        else:
            out += [c for c in texts(at.caption) if c.startswith(kind)]
    return out


def head_button(at: AppTest, what: str, layer: int, head: int):
    """Every head's button ``what`` ("toggle": ablate or restore, "open": on the step pages) of head (layer, head),
    0-based. Only the chosen head's buttons are drawn: the head is chosen first when needed (and its layer, on a wide
    model that draws one layer), as a learner does."""
    key = f"inside.{what}.{layer}.{head}"
    if not any(b.key == key for b in at.button):
        if any(s.key == keys.INSIDE_LAYER_SHOWN for s in at.selectbox):
            at = select(at, keys.INSIDE_LAYER_SHOWN, layer)
        at = select(at, keys.INSIDE_HEAD_SHOWN, (layer, head))
    return at.button(key=key)


def press(at: AppTest, key: str) -> AppTest:
    """Press the button ``key``: an Every head button of a head (``inside.toggle.1.0``) through :func:`head_button`."""
    found = re.fullmatch(r"inside\.(toggle|open)\.(\d+)\.(\d+)", key)
    if found:
        return head_button(at, found.group(1), int(found.group(2)), int(found.group(3))).click().run()
    return at.button(key=key).click().run()


def paste(at, name: str, text: str):
    """Paste ``text`` into the import box of ``name`` and press Apply (opening the box first, as a learner does)."""
    if not any(w.key == f"imp.{name}.text" for w in at.text_area):
        at = open_expander(at, f"import.{name}")
    at.text_area(key=f"imp.{name}.text").input(text)
    return at.button(key=f"imp.{name}.apply").click().run()
