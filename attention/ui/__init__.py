"""The only part of the package that imports Streamlit, in rooms that import only from the rooms before them.

The rooms (each a folder here) and their floors are the picture "Inside attention/ui" in docs/architecture.md, which
tests/engine/test_architecture.py holds every folder and import to; it is not repeated here, so it cannot go stale.
"""
