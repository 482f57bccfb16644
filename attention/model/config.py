"""The shape of a decoder-only transformer: sizes, positions, which parts it has; checked in one place.

A model is a stack of ``n_layers`` blocks on a residual stream of width ``d_model``. Each block is, pre-LayerNorm
(GPT-2):

    x = x + Attention(LN₁(x))          causal multi-head attention, n_heads heads, mixed by W_o
    x = x + MLP(LN₂(x))                MLP(h) = act(h W_fc + b_fc) W_proj + b_proj

then a final LayerNorm and the unembedding, logits = LN_f(x) W_U (W_U = W_Eᵀ when tied). An attention-only
model ("A Mathematical Framework for Transformer Circuits") has no LayerNorm and no MLP: x = x + Attention(x).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .. import positions
from ..errors import AttentionError
from ..names import is_whole

ACTIVATIONS = ("gelu_new", "gelu", "relu")  # gelu_new: GPT-2's tanh approximation; gelu: the exact erf form
MAX_LAYERS = 96
MAX_WIDTH = 16384
MAX_VOCAB = 1_000_000
MAX_CONTEXT = 65536


@dataclass(frozen=True)
class Config:
    """Sizes and parts of a model.

    vocab_size, n_ctx (the most tokens one pass may take), d_model, n_layers, n_heads (d_model must divide by it);
    d_mlp: the MLP's hidden width (4 d_model in GPT-2; unused when attention_only); positions: "learned" (a matrix
    W_pos added to the token embeddings, GPT-2), "sinusoidal" (added likewise), "rotary" (each head's Q and K
    turned) or "none"; attention_only: no LayerNorm, no MLP; tied: W_U = W_Eᵀ; bias: the projections and the MLP
    have biases (GPT-2) or not; ln_eps: LayerNorm's ε; activation: the MLP's nonlinearity (see ACTIVATIONS);
    scale_by_layer: GPT-2's scale_attn_by_inverse_layer_idx (layer l's scores are further divided by l + 1);
    scale_attn: divide the scores by √d_head (GPT-2's scale_attn_weights).
    """

    vocab_size: int
    n_ctx: int
    d_model: int
    n_layers: int
    n_heads: int
    d_mlp: int = 0
    positions: str = "learned"
    attention_only: bool = False
    tied: bool = True
    bias: bool = True
    ln_eps: float = 1e-5
    activation: str = "gelu_new"
    scale_by_layer: bool = False
    scale_attn: bool = True

    @property
    def d_head(self) -> int:
        """The width of one head's queries, keys and values: d_model / n_heads."""
        return self.d_model // self.n_heads

    def replace(self, **changes: object) -> Config:
        """A copy with some fields changed, checked."""
        return dataclasses.replace(self, **changes).validate()  # type: ignore[arg-type]

    def validate(self, where: str = "config") -> Config:
        """Raise AttentionError naming the first field out of range (``field`` is its name); return self."""
        for name, value, low, high in (
            ("vocab_size", self.vocab_size, 1, MAX_VOCAB),
            ("n_ctx", self.n_ctx, 1, MAX_CONTEXT),
            ("d_model", self.d_model, 1, MAX_WIDTH),
            ("n_layers", self.n_layers, 1, MAX_LAYERS),
            ("n_heads", self.n_heads, 1, MAX_WIDTH),
            ("d_mlp", self.d_mlp, 0, 8 * MAX_WIDTH),
        ):
            if not (is_whole(value) and low <= value <= high):
                raise AttentionError(
                    f"{where}.{name} must be a whole number from {low} to {high}; got {value!r}", field=name
                )
        if self.d_model % self.n_heads:
            raise AttentionError(
                f"{where}.d_model = {self.d_model} does not divide into n_heads = {self.n_heads} heads", field="n_heads"
            )
        if self.positions not in positions.KINDS:
            raise AttentionError(
                f"{where}.positions must be one of {', '.join(positions.KINDS)}; got {self.positions!r}",
                field="positions",
            )
        if not self.attention_only and self.d_mlp < 1:
            raise AttentionError(f"{where}.d_mlp must be at least 1 when the model has MLPs", field="d_mlp")
        if self.activation not in ACTIVATIONS:
            raise AttentionError(
                f"{where}.activation must be one of {', '.join(ACTIVATIONS)}; got {self.activation!r}",
                field="activation",
            )
        if not (isinstance(self.ln_eps, (int, float)) and 0 < self.ln_eps < 1):
            raise AttentionError(
                f"{where}.ln_eps must be a number between 0 and 1; got {self.ln_eps!r}", field="ln_eps"
            )
        return self
