"""The address: the query parameters that reproduce the whole state, read once and written every run."""
