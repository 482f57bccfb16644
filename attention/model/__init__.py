"""A transformer you can open: a decoder-only model in numpy whose every head is an attention Trace.

Public names: ``load(path, dtype=None) -> Model`` (a checkpoint folder of GPT-2, Llama, Mistral, Qwen2, Qwen3, Gemma
3, GPT-NeoX, OLMo-2 or Phi-3, the families of :data:`.families.FAMILIES`, or a GGUF file of llama, qwen2, qwen3 or
gemma3; float64 or float32, see :mod:`.checkpoint` for the rule), ``builtin("induction") -> Model`` (the shipped 2-layer
attention-only model), ``Model`` (``encode``, ``run``, ``generate``, ``notes``), ``Run`` (``logits``, ``weights``
(layers, query heads, n, n), ``head(layer, head)`` a head's Trace with its group's K and V), ``Config`` (every family
is a set of its fields), the interventions ``ablate``, ``replace_matrix``, ``replace_gains``, ``patch_head`` and
``patch_stream``, what the heads write (:mod:`.readout`: ``lens``, ``attribute``, ``patch``, ``sweep``), attribution
patching (:mod:`.atp`: ``estimate``, the linear estimate of every patch from one backward pass, and ``gradients``),
the routes of a prediction (:mod:`.flow`: ``routes``), what a head, an MLP or a neuron pushes toward
(:mod:`.pushes`), and ``train`` (attention-only models, analytic gradients, Adam). docs/models.md has an example and
the families.

    m = load(folder); r = m.run(m.encode("The cat sat")); r.weights.shape; r.head(0, 1).weights
"""

from .atp import Estimate, Gradients, estimate, gradients
from .checkpoint import load
from .config import Config
from .flow import Edge, Routes, routes
from .induction import builtin
from .interventions import Intervention, ablate, patch_head, patch_stream, replace_gains, replace_matrix
from .model import Generation, KVCache, Model, Run, Step, init_params, param_shapes
from .readout import Attribution, Sweep, attribute, lens, patch, restored, sweep
from .train import TrainResult, loss_and_grads, train

__all__ = [
    "Attribution",
    "Config",
    "Edge",
    "Estimate",
    "Generation",
    "Gradients",
    "Intervention",
    "KVCache",
    "Model",
    "Routes",
    "Run",
    "Step",
    "Sweep",
    "TrainResult",
    "ablate",
    "attribute",
    "builtin",
    "estimate",
    "gradients",
    "init_params",
    "lens",
    "load",
    "loss_and_grads",
    "param_shapes",
    "patch",
    "patch_head",
    "patch_stream",
    "replace_gains",
    "replace_matrix",
    "restored",
    "routes",
    "sweep",
    "train",
]
