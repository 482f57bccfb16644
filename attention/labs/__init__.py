"""Teaching labs computed by the engine: why √d_k, numerical stability, and challenges."""
