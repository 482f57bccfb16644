from attention.ui.page import render_overview

render_overview()
