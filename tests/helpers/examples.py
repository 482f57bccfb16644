"""Every family's tiny examples, from the engine's own table (attention.model.families.FAMILIES), without torch: the
sizes they share, each example's config.json and the Config the engine reads from it (what a test asks of a family's
features: QK-norm, sliding layers, a partial rotation ...)."""

from __future__ import annotations

import dataclasses

from attention.model import Config
from attention.model.families import FAMILIES as ENGINE_FAMILIES
from attention.model.families import read_config

VOCAB, N_CTX = 128, 40
SIZES = dict(  # every example's sizes; its family's own keys come from the family's record (attention.model.families)
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    max_position_embeddings=N_CTX,
    initializer_range=0.2,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=0,
)
TYPES = {name: kind for kind, f in ENGINE_FAMILIES.items() for name in f.examples}  # example -> model_type


def config_json(name: str) -> dict:
    """The example's config.json as our reader sees it before transformers fills in its defaults."""
    return {"model_type": TYPES[name], **SIZES, **ENGINE_FAMILIES[TYPES[name]].examples[name]}


def tiny_config(name: str) -> Config:
    """The example's Config, read from its config.json by the engine (no transformers needed): what the tests ask
    of a family's features (QK-norm, sliding layers ...)."""
    return read_config(config_json(name))[1]


def example_parts(name: str, **sizes: object) -> dict:
    """The example's Config as fields, with some sizes changed (a test's own vocabulary and context)."""
    return {**dataclasses.asdict(tiny_config(name)), **sizes}
