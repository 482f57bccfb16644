"""What a page shows of a trace: matrices, heatmaps (one per head), the reading, one cell explained, compare."""
