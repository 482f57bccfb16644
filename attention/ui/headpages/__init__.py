"""The pages inside a model that read its heads' patterns, one body each (named by its entry in specs.INSIDE)."""
