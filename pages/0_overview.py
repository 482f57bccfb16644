from attention.ui.app.frame import render_overview

render_overview()
