"""A browser tab without the browser: one Streamlit session over Streamlit's own websocket protocol, for load tests.

What a tab does, in the order a browser does it (Streamlit 1.67's frontend and server):

1. HTTP ``GET /`` and ``/_stcore/health``: the server sets the ``_streamlit_xsrf`` cookie (and a proxy in front may
   set its stickiness cookie); ``/_stcore/host-config``.
2. A websocket to ``/_stcore/stream`` whose ``Sec-WebSocket-Protocol`` is ``streamlit, <xsrf cookie>`` (the
   server reads the second entry as the XSRF token), with the cookies and a same-origin ``Origin`` header.
3. A ``BackMsg.rerun_script`` (a ``ClientState``: query string, page, widget states, browser context) starts a
   run; the server answers with ``ForwardMsg``: ``new_session`` (the run's id), ``navigation``, one ``delta`` per
   element (``metadata.delta_path`` is its place), ``page_info_changed`` and ``script_finished`` (tagged with
   the run's id). Every interaction is another ``rerun_script`` carrying the value of every widget on the page,
   as the frontend's widget manager keeps them: a value the server pushes (``set_value``) replaces the tab's,
   a widget not drawn by a finished run is forgotten, and a button press is a one-shot trigger.
   A widget drawn inside an ``st.fragment`` (its delta's ``fragment_id``) sends that id with its rerun: the server
   may then rerun only fragments (``metadata.run.fragment_ids`` of the ``new_session``), whose deltas replace the
   fragments' elements while every other element stays, and which end with ``FINISHED_FRAGMENT_RUN_SUCCESSFULLY``.
4. A download button with deferred data (``st.download_button(data=callable)``) is a
   ``BackMsg.backend_operation_request``; the answer holds a ``/media/...`` URL, fetched over HTTP.

The only code that knows this app's widgets is :func:`find_widget`, which finds them by what a person sees.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import requests
from streamlit.components.v2.bidi_component.main import _make_trigger_id as trigger_id
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.NumberInput_pb2 import NumberInput
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

FINISHED = ForwardMsg.ScriptFinishedStatus.Value("FINISHED_SUCCESSFULLY")
FRAGMENT_FINISHED = ForwardMsg.ScriptFinishedStatus.Value("FINISHED_FRAGMENT_RUN_SUCCESSFULLY")
COMPILE_ERROR = ForwardMsg.ScriptFinishedStatus.Value("FINISHED_WITH_COMPILE_ERROR")
XSRF_COOKIE = "_streamlit_xsrf"
UPSTREAM_HEADER = "X-Upstream"  # set by deploy/nginx.conf: which replica answered


class TabError(Exception):
    """The tab could not do what was asked. Messages (like every problem reported here) read "<category>: <detail>":
    disconnected, timeout, download failed, http, widget not found."""


@dataclass(frozen=True)
class Element:
    """One element of a run: where it is (``delta_path``), its kind (``Element``'s oneof, e.g. "selectbox",
    "dataframe", "download_button") and its own protobuf message."""

    path: tuple[int, ...]
    kind: str
    proto: Any
    fragment: str = ""  # the st.fragment that drew it ("" outside any)

    @property
    def label(self) -> str:
        return getattr(self.proto, "label", "")

    @property
    def widget_id(self) -> str:
        return getattr(self.proto, "id", "") if self.kind in WIDGET_KINDS else ""

    @property
    def key(self) -> str:
        """The script's key for a widget: Streamlit's ids are ``$$ID-<hash>-<key>``."""
        parts = self.widget_id.split("-", 2)
        return parts[2] if len(parts) == 3 else ""


WIDGET_KINDS = {
    "selectbox",
    "radio",
    "number_input",
    "text_input",
    "text_area",
    "checkbox",
    "multiselect",
    "button",
    "download_button",
    "dataframe",
    "file_uploader",
    "vega_lite_chart",
    "expandable",  # an expander whose opening reruns the page (its contents are drawn only while open)
    "bidi_component",  # the matrix editor (attention/ui/widgets/matrix_grid.py): its edits are an "edit" trigger
}


def find(
    elements: list[Element], kind: str, *, label: str | None = None, key_start: str | None = None
) -> list[Element]:
    """The elements of one kind with exactly this label and/or whose widget key starts with ``key_start``."""
    return [
        e
        for e in elements
        if e.kind == kind and (label is None or e.label == label) and (key_start is None or e.key.startswith(key_start))
    ]


# ==================================================================================================================
# THE APP'S WIDGETS, FOUND BY WHAT A PERSON SEES. The one place that knows this app's layout: when the UI changes
# (labels, keys, pages), change this function and the two lists just below (page titles start with these words; the
# CSV of each matrix is downloaded on that page), nothing else.
# ==================================================================================================================
EDIT_PAGES = ("Tokens", "Weights", "Q·K·V", "Scores", "Scaling", "Softmax", "Output")  # pages showing input grids
DOWNLOADS = (("X", "Tokens"), ("W_q", "Weights"), ("W_k", "Weights"), ("W_v", "Weights"), ("weights", "Softmax"))


def find_widget(tab: Tab, what: str, name: str = "") -> Element | str | None:
    """``"preset"``: the sidebar's Preset box; ``"editor"``: the grid of input matrix ``name`` (X, W_q, W_k, W_v;
    a grid has no label, so: the matrix editor whose key starts ``ed.<name>.``); ``"download"``: the
    "Download <name>.csv" button (drawn once the page's "Downloads" expander is open); ``"expander"``: an expander
    whose heading starts with ``name``; ``"page"``: the hash of the page whose title in the sidebar starts with
    ``name``.
    None when the current page does not show it."""
    if what == "page":
        return next((h for title, h in tab.pages.items() if title.startswith(name)), None)
    if what == "preset":
        found = find(tab.elements, "selectbox", label="Preset")
    elif what == "editor":
        found = find(tab.elements, "bidi_component", key_start=f"ed.{name}.")
    elif what == "download":
        found = find(tab.elements, "download_button", label=f"Download {name}.csv")
    elif what == "expander":  # by the start of its heading
        found = [e for e in tab.elements if e.kind == "expandable" and e.label.startswith(name)]
    else:
        raise ValueError(f"unknown widget {what!r}")
    return found[0] if found else None


# ==================================================================================================================


@dataclass
class Run:
    """One interaction as the tab saw it: the seconds from sending the BackMsg to the ``script_finished`` of the
    run it started, and what a person would see as broken in that run."""

    seconds: float
    elements: list[Element]
    problems: list[str] = field(default_factory=list)
    fragments: tuple[str, ...] = ()  # the fragments the finished run reran (empty: the whole page ran)
    messages: int = 0  # ForwardMsgs received from sending the BackMsg to the run's script_finished, both counted
    kinds: dict[str, int] = field(default_factory=dict)  # those messages by kind (an element's or block's type)


def initial_state(e: Element) -> WidgetState | None:
    """The value the frontend reports for a widget when it is drawn (None: it reports none until used)."""
    p, ws = e.proto, WidgetState(id=e.widget_id)
    if e.kind in ("selectbox", "radio"):
        if p.HasField("raw_value"):
            ws.string_value = p.raw_value
        elif p.HasField("default") and p.options:
            ws.string_value = p.options[p.default]
        else:
            return None
    elif e.kind == "number_input":
        value = p.value if p.HasField("value") else p.default if p.HasField("default") else None
        if value is None:
            return None
        if p.data_type == NumberInput.DataType.INT:
            ws.int_value = int(value)
        else:
            ws.double_value = value
    elif e.kind in ("text_input", "text_area"):
        value = p.value if p.HasField("value") else p.default if p.HasField("default") else None
        if value is None:
            return None
        ws.string_value = value
    elif e.kind == "checkbox":
        ws.bool_value = p.value if p.set_value else p.default
    elif e.kind == "multiselect":
        ws.string_array_value.data.extend(p.raw_values if p.set_value else [p.options[i] for i in p.default])
    else:
        return None  # buttons (one-shot triggers), grids (only once edited), charts, uploaders
    return ws


class Tab:
    """One browser tab on the app at ``base_url`` (``http://host:port``)."""

    def __init__(self, base_url: str, timeout: float = 120.0) -> None:
        self.base = base_url.rstrip("/")
        self.timeout = timeout
        self.http = requests.Session()
        self.upstreams: list[str] = []  # the proxy's X-Upstream of every response (empty without a proxy)
        self.values: dict[str, WidgetState] = {}  # widget id -> the value the tab reports
        self.pid, self.sent = uuid.uuid4().hex[:12], 0  # this tab's id and its last edit's sequence number
        self.elements: list[Element] = []  # the last finished run's elements
        self.pages: dict[str, str] = {}  # page title (as in the sidebar) -> page script hash
        self.page_hash = ""
        self.query = ""
        self.session_id = ""
        self.closed_reason = ""
        self._ws: Any = None
        self._reader: asyncio.Task | None = None
        self._building: dict[tuple[int, ...], Element] = {}  # the run being received, by place
        self._fragments: dict[str, tuple[str, ...]] = {}  # run id -> the fragments it reruns (empty: the whole page)
        self._sent: set[tuple[int, ...]] = set()  # the places the run being received has drawn
        self._finished_fragments: tuple[str, ...] = ()  # what the last finished run reran
        self._problems: list[str] = []
        self._runs_since_send: set[str] = set()
        self._run_done: asyncio.Future | None = None
        self._operations: dict[str, asyncio.Future] = {}
        self._received: dict[str, int] = {}  # ForwardMsgs received since the last BackMsg that starts a run, by kind

    # ---------------------------------------------------------------------------------------------- HTTP

    async def get(self, path: str) -> requests.Response:
        """An HTTP GET on the app, with this tab's cookies; raises TabError on a status other than 200."""
        url = path if path.startswith("http") else f"{self.base}/{path.lstrip('/')}"
        r = await asyncio.to_thread(self.http.get, url, timeout=self.timeout)
        self._note_upstream(r.headers)
        if r.status_code != 200:
            raise TabError(f"http: GET {path} answered {r.status_code}")
        return r

    def _note_upstream(self, headers: Any) -> None:
        if headers.get(UPSTREAM_HEADER):
            self.upstreams.append(headers[UPSTREAM_HEADER])

    # ---------------------------------------------------------------------------------------------- session

    async def open(self, page: str = "", query: str = "") -> Run:
        """Load the app at ``/<page>?<query>`` and wait for the first run to finish."""
        await self.get(f"/{page}")
        await self.get("/_stcore/health")  # sets the XSRF cookie
        await self.get("/_stcore/host-config")
        xsrf = self.http.cookies.get(XSRF_COOKIE)
        cookies = "; ".join(f"{c.name}={c.value}" for c in self.http.cookies)
        self._ws = await connect(
            self.base.replace("http", "ws", 1) + "/_stcore/stream",
            subprotocols=["streamlit", xsrf] if xsrf else ["streamlit"],  # type: ignore[list-item]
            additional_headers={"Cookie": cookies} if cookies else None,
            origin=self.base,  # type: ignore[arg-type]
            max_size=None,
            open_timeout=self.timeout,
        )
        self._note_upstream(self._ws.response.headers)
        self._reader = asyncio.create_task(self._read())
        return await self.rerun(page_name=page, query=query)

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        self.http.close()

    async def rerun(
        self,
        changes: list[WidgetState] = (),  # type: ignore[assignment]
        page_hash: str | None = None,
        page_name: str = "",
        query: str | None = None,
    ) -> Run:
        """Send a ``rerun_script`` with every widget's value (``changes`` applied; a trigger only for this run) and
        wait for that run's ``script_finished``."""
        for ws in changes:
            if ws.WhichOneof("value") not in ("trigger_value", "string_trigger_value", "json_trigger_value"):
                self.values[ws.id] = ws
        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string = self.query if query is None else query
        cs.page_script_hash = self.page_hash if page_hash is None else page_hash
        cs.page_name = page_name
        sent = {ws.id: ws for ws in self.values.values()} | {ws.id: ws for ws in changes}
        cs.widget_states.widgets.extend(sent.values())
        drawn_in = {e.widget_id: e.fragment for e in self.elements if e.widget_id}
        drawn_in |= {trigger_id(e.widget_id, "events"): e.fragment for e in self.elements if e.kind == "bidi_component"}
        fragments = {drawn_in.get(ws.id, "") for ws in changes}
        if page_hash is None and len(fragments) == 1:  # a widget inside a fragment asks for that fragment's rerun
            cs.fragment_id = fragments.pop()
        info = cs.context_info
        info.timezone, info.timezone_offset, info.locale = "UTC", 0, "en-US"
        info.url, info.color_scheme = f"{self.base}/{page_name}", "light"
        return await self._send_and_wait(msg)

    async def _send_and_wait(self, msg: BackMsg) -> Run:
        if self.closed_reason:
            raise TabError(f"disconnected: {self.closed_reason}")
        self._runs_since_send = set()
        self._problems = []
        self._received = {}
        self._run_done = asyncio.get_running_loop().create_future()
        start = time.perf_counter()
        await self._ws.send(msg.SerializeToString())
        try:
            finished = await asyncio.wait_for(self._run_done, self.timeout)
        except TimeoutError:
            raise TabError(f"timeout: no script_finished within {self.timeout:g} s") from None
        return Run(
            finished - start,
            self.elements,
            list(self._problems),
            self._finished_fragments,
            sum(self._received.values()),
            dict(self._received),
        )

    # ---------------------------------------------------------------------------------------------- a person's acts

    async def choose(self, box: Element, option_start: str) -> Run:
        """Pick the option of a selectbox or radio whose text (as shown) is, or else starts with, ``option_start``."""
        options = [o for o in box.proto.options if o == option_start]  # an exact name wins over its prefixes
        options = options or [o for o in box.proto.options if o.startswith(option_start)]
        if len(options) != 1:
            raise TabError(f"widget not found: {box.label!r} has {len(options)} options starting {option_start!r}")
        return await self.rerun([WidgetState(id=box.widget_id, string_value=options[0])])

    async def goto(self, page_hash: str) -> Run:
        """Follow a link in the sidebar's navigation (the frontend drops the page's query string on the way)."""
        return await self.rerun(page_hash=page_hash, query="")

    async def edit_cells(self, grid: Element, cells: dict[tuple[int, str], str]) -> Run:
        """Type ``text`` into cells of a matrix editor, ``{(row position, column name): text}``: what its page sends,
        an "edit" trigger with the cells, this tab's id, the next sequence number and the numbers it was drawn over."""
        self.sent += 1
        edited: dict[str, dict[str, str]] = {}
        for (row, col), text in cells.items():
            edited.setdefault(str(row), {})[col] = text
        ver = json.loads(grid.proto.json).get("ver", "")
        payload = {"pid": self.pid, "seq": self.sent, "ver": ver, "edited_rows": edited}
        trigger = json.dumps([{"event": "edit", "value": payload}])
        return await self.rerun([WidgetState(id=trigger_id(grid.widget_id, "events"), json_trigger_value=trigger)])

    async def open_expander(self, box: Element) -> Run:
        """Open an expander that reruns the page when opened (its contents are drawn in that run)."""
        return await self.rerun([WidgetState(id=box.widget_id, bool_value=True)])

    async def download(self, button: Element) -> bytes:
        """Click a download button and fetch the file, as the browser does."""
        url = button.proto.url
        if not url:
            request_id = uuid.uuid4().hex
            msg = BackMsg()
            req = msg.backend_operation_request
            req.request_id, req.session_id = request_id, self.session_id
            req.deferred_file.file_id = button.proto.deferred_file_id
            done = asyncio.get_running_loop().create_future()
            self._operations[request_id] = done
            await self._ws.send(msg.SerializeToString())
            try:
                answer = await asyncio.wait_for(done, self.timeout)
            except TimeoutError:
                raise TabError(f"timeout: no answer to the download of {button.label!r}") from None
            if answer.error_msg:
                raise TabError(f"download failed: {button.label!r} was refused: {answer.error_msg}")
            url = answer.deferred_file.url
        try:
            return (await self.get(url)).content
        except TabError as exc:
            raise TabError(f"download failed: {button.label!r}: {str(exc).removeprefix('http: ')}") from None

    # ---------------------------------------------------------------------------------------------- the stream

    async def _read(self) -> None:
        try:
            async for data in self._ws:
                msg = ForwardMsg()
                msg.ParseFromString(data)
                self._on_message(msg, time.perf_counter())
            self.closed_reason = "the server closed the websocket"
        except ConnectionClosed as exc:
            self.closed_reason = f"websocket closed ({exc})"
        except Exception as exc:  # noqa: BLE001 - any failure ends the tab; it is reported, not hidden
            self.closed_reason = f"{type(exc).__name__}: {exc}"
        for waiting in [self._run_done, *self._operations.values()]:
            if waiting is not None and not waiting.done():
                waiting.set_exception(TabError(f"disconnected: {self.closed_reason}"))

    def _on_message(self, msg: ForwardMsg, now: float) -> None:
        kind = msg.WhichOneof("type")
        if self._run_done is not None and not self._run_done.done():
            what = _kind_of(msg)
            self._received[what] = self._received.get(what, 0) + 1
        if kind == "new_session":
            if msg.new_session.initialize.session_id:
                self.session_id = msg.new_session.initialize.session_id
            run = msg.metadata.run
            self._runs_since_send.add(run.script_run_id)
            self._fragments[run.script_run_id] = tuple(run.fragment_ids)
            # a fragment run redraws its fragments only: every other element of the last finished run stays
            self._building = {e.path: e for e in self.elements} if run.fragment_ids else {}
            self._sent = set()
        elif kind == "navigation":
            self.pages = {p.page_name: p.page_script_hash for p in msg.navigation.app_pages}
            self.page_hash = msg.navigation.page_script_hash
        elif kind == "page_info_changed":
            self.query = msg.page_info_changed.query_string
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            path = tuple(msg.metadata.delta_path)
            self._sent.add(path)
            self._on_element(Element(path, *_element(msg.delta.new_element), msg.delta.fragment_id))
        elif kind == "delta" and msg.delta.WhichOneof("type") == "add_block":  # a new block replaces what was there
            path = tuple(msg.metadata.delta_path)
            self._sent.add(path)
            self._building = {p: e for p, e in self._building.items() if p[: len(path)] != path}
            block = msg.delta.add_block
            if block.WhichOneof("type") == "expandable" and block.expandable.id:  # an expander that reruns: a widget
                self._on_element(Element(path, "expandable", block.expandable, msg.delta.fragment_id))
        elif kind == "page_not_found":
            self._problems.append(f"page not found: {msg.page_not_found.page_name!r}")
        elif kind == "backend_operation_response":
            waiting = self._operations.pop(msg.backend_operation_response.request_id, None)
            if waiting is not None and not waiting.done():
                waiting.set_result(msg.backend_operation_response)
        elif (
            kind == "script_finished"
            and msg.metadata.run.script_run_id in self._runs_since_send
            and msg.script_finished in (FINISHED, FRAGMENT_FINISHED, COMPILE_ERROR)  # not FINISHED_EARLY_FOR_RERUN
        ):
            if msg.script_finished == COMPILE_ERROR:
                self._problems.append("compile error: the script did not compile")
            self._finished_fragments = self._fragments.get(msg.metadata.run.script_run_id, ())
            rerun = set(self._finished_fragments)
            # as the frontend does: an element of a rerun fragment that this run did not draw again is gone
            stale = {p for p, e in self._building.items() if e.fragment in rerun and p not in self._sent}
            self.elements = [e for p, e in self._building.items() if p not in stale]
            drawn = {e.widget_id for e in self.elements if e.widget_id}
            self.values = {wid: ws for wid, ws in self.values.items() if wid in drawn}
            if self._run_done is not None and not self._run_done.done():
                self._run_done.set_result(now)

    def _on_element(self, e: Element) -> None:
        self._building[e.path] = e
        if e.kind == "exception":
            self._problems.append(f"exception: {e.proto.type}: {e.proto.message[:200]}")
        elif e.kind == "alert" and e.proto.format == Alert.Format.ERROR:
            self._problems.append(f"error box: {e.proto.body[:200]}")
        if not e.widget_id:
            return
        pushed = getattr(e.proto, "set_value", False)
        if pushed or e.widget_id not in self.values:
            state = initial_state(e)
            if state is not None:
                self.values[e.widget_id] = state


def _kind_of(msg: ForwardMsg) -> str:
    """A message's kind: a new element's type, a new block's type, else the message's own type."""
    kind = msg.WhichOneof("type")
    if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
        return msg.delta.new_element.WhichOneof("type")
    if kind == "delta" and msg.delta.WhichOneof("type") == "add_block":
        return f"block:{msg.delta.add_block.WhichOneof('type')}"
    return kind or "?"


def _element(el: Any) -> tuple[str, Any]:
    kind = el.WhichOneof("type")
    return kind, getattr(el, kind)


def grid_frame(grid: Element) -> Any:
    """The table a matrix editor shows (a pandas DataFrame: its index is the row labels, its columns the headers)."""
    import pandas as pd

    if grid.kind != "bidi_component":
        raise TabError(f"widget not found: {grid.path} is not a matrix editor")
    data = json.loads(grid.proto.json)
    return pd.DataFrame(data["shown"], index=data["rows"], columns=data["cols"])
