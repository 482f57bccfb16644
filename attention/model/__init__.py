"""A transformer you can open: a decoder-only model in numpy whose every head is an attention Trace.

Public names: ``load(path) -> Model`` (a GPT-2 checkpoint folder), ``builtin("induction") -> Model`` (the shipped
2-layer attention-only model), ``Model`` (``encode``, ``run``, ``generate``), ``Run``, ``Config``, the
interventions ``ablate`` and ``replace_matrix``, and ``train`` (attention-only models, analytic gradients, Adam).
"""

from .checkpoint import load
from .config import Config
from .induction import builtin
from .interventions import Intervention, ablate, replace_matrix
from .model import Generation, KVCache, Model, Run, Step, init_params, param_shapes
from .train import TrainResult, loss_and_grads, train

__all__ = [
    "Config",
    "Generation",
    "Intervention",
    "KVCache",
    "Model",
    "Run",
    "Step",
    "TrainResult",
    "ablate",
    "builtin",
    "init_params",
    "load",
    "loss_and_grads",
    "param_shapes",
    "replace_matrix",
    "train",
]
