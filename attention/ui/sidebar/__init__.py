"""The sidebar every page draws: preset, seed, conventions, mask, reset, then save, share and export."""
