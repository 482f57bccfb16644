"""Scaled dot-product self-attention, step by step, in numpy (no Streamlit outside ``attention.ui``).

Layers: the math (names, steps, masks, heads, trace, shapes, rng, errors), file formats in ``attention.io``,
Altair chart builders in ``attention.charts``, and the Streamlit app in ``attention.ui``.

Public names: ``list_presets``, ``load_preset``, ``self_attention``, ``scaled_dot_product_attention``,
``Options``, ``Trace``, ``Reading``, ``backward``, ``train``, ``train_many``, ``evaluate``, ``TrainResult``,
``AttentionError``, ``cross_attention``; the modules ``positions``, ``masks``, ``reading``, ``learn``, ``targets``,
``optimisers``, ``flash`` (the tiled online softmax) and ``kvcache`` (the KV cache's arithmetic).
"""

from . import flash, kvcache, learn, masks, optimisers, positions, reading, targets
from .backward import backward
from .errors import AttentionError
from .heads import merge_heads, split_heads
from .io.presets import Preset, blank, from_state, list_presets, load_preset, parse_preset
from .learn import TrainResult, evaluate, train, train_many
from .options import Options
from .reading import Reading
from .shapes import shape_trace
from .trace import (
    ARRAY_NAMES,
    MultiHeadTrace,
    Trace,
    cross_attention,
    multi_head,
    scaled_dot_product_attention,
    self_attention,
)

__all__ = [
    "ARRAY_NAMES",
    "AttentionError",
    "MultiHeadTrace",
    "Options",
    "Preset",
    "Reading",
    "Trace",
    "TrainResult",
    "backward",
    "blank",
    "cross_attention",
    "evaluate",
    "flash",
    "from_state",
    "kvcache",
    "learn",
    "list_presets",
    "load_preset",
    "masks",
    "merge_heads",
    "multi_head",
    "optimisers",
    "parse_preset",
    "positions",
    "reading",
    "scaled_dot_product_attention",
    "self_attention",
    "shape_trace",
    "split_heads",
    "targets",
    "train",
    "train_many",
]
