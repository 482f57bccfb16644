"""Entry point: `streamlit run streamlit_app.py`. The overview page; the steps are in pages/."""

from attention.ui.page import render_overview

render_overview()
