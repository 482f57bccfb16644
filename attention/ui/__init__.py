"""The only part of the package that imports Streamlit, in rooms that import only from the rooms before them.

core, state, address, widgets, inputs, views, controls, sidebar, labpages, app: see docs/architecture.md.
"""
