"""Entry point: `streamlit run streamlit_app.py`.

Declares the navigation (the overview, then one page per step, labelled as the steps) and runs the
chosen page. Every page file also calls the shared set-up itself, so it works when run on its own
(direct URL, AppTest) too.
"""

import streamlit as st

from attention.ui.page import NAV, render_overview

pages = [st.Page(render_overview, title="Overview", icon="🔎", url_path="overview", default=True)]
pages += [st.Page(path, title=label, url_path=path.split("_", 1)[1].removesuffix(".py")) for path, label in NAV[1:]]
st.navigation(pages).run()
