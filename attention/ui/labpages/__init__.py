"""The bodies of the pages beyond the steps, one module each, named by its entry in specs.LABS."""
