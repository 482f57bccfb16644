"""Entry point: `streamlit run streamlit_app.py`.

Declares the navigation (the overview, then one page per step, labelled as the steps) and runs the
chosen page. Every page file also calls the shared set-up itself, so it works when run on its own
(direct URL, AppTest) too.
"""

from attention.ui.app.nav import navigation

navigation()
