"""The floor app with this app's heatmap: the same 4 × 4 editor and 3 × 3 weights, drawn by the Softmax page's own
chart code (``charts.heatmap`` through ``widgets.common.vega_chart``: title, legend, text, tooltips, a cell click).
Beside the floor app it measures what the chart alone costs an edit; beside the Softmax page, what the rest does."""

from attention import charts
from attention.ui.widgets.common import vega_chart
from benchmarks.floor import grid

a = grid.edited_weights()
spec = charts.heatmap(a, list("abc"), list("abc"), charts.Style(title="Attention weights", digits=4, select=True))
vega_chart(spec, width="stretch", on_select=lambda: None, selection_mode="cell", key="heatmap")
