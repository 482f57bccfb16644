"""The engine against independent oracles that need torch and transformers (the model, the family, learning)."""
