"""transformers as a float64 oracle: the few steps it computes in float32 on purpose, made float64 while it runs.

transformers computes RMSNorm's mean square, the RoPE frequencies and angles, and the eager softmax in float32 even
in a float64 model, which leaves float32 rounding (~1e-7) in its output. :func:`float64_oracle` points
``torch.float32``, ``torch.float`` and ``Tensor.float`` at float64 while the oracle runs, and :func:`refresh_rotary`
recomputes a model's rotary frequencies (made in float32 when it was built) under it: the oracle is then float64
throughout, and ours and it agree to ~1e-15.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def float64_oracle() -> Iterator[None]:
    """While it runs, transformers' deliberate float32 steps compute in float64 (see the module's docstring)."""
    saved = torch.float32, torch.float, torch.Tensor.float
    torch.float32 = torch.float = torch.float64  # type: ignore[misc]
    torch.Tensor.float = lambda self, *a, **k: self.to(torch.float64)  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.float32, torch.float, torch.Tensor.float = saved  # type: ignore[misc]


def refresh_rotary(model: torch.nn.Module) -> None:
    """Recompute every rotary module's frequencies in float64 (they were made in float32 when it was built)."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    with float64_oracle():
        for module in model.modules():
            types = getattr(module, "rope_type", None)
            if isinstance(types, dict):  # Gemma 3: one set of frequencies per layer type
                for kind, rope in types.items():
                    fn = module.compute_default_rope_parameters if rope == "default" else ROPE_INIT_FUNCTIONS[rope]
                    setattr(module, f"{kind}_inv_freq", fn(module.config, layer_type=kind)[0])
            elif isinstance(types, str) and hasattr(module, "inv_freq"):
                fn = module.compute_default_rope_parameters if types == "default" else ROPE_INIT_FUNCTIONS[types]
                module.inv_freq = fn(module.config)[0]
