"""The only part of the package that imports Streamlit: state, sidebar, editors, charts, page frame."""
