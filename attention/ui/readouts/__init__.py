"""The pages inside a model that read what the heads write (lens, shares, patching, routes), named in specs.INSIDE."""
