"""The controls a page's spec names: sizes, W_o, the mask grid, positions, embeddings, the family's settings."""
