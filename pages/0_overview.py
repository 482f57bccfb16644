from attention.ui.frame import render_overview

render_overview()
