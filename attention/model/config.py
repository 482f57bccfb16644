"""The shape of a decoder-only transformer: sizes, positions, which parts it has; checked in one place.

A model is a stack of ``n_layers`` blocks on a residual stream of width ``d_model``. Each block is, pre-norm:

    x = x + Attention(N₁(x))           causal attention, n_heads query heads sharing n_kv_heads key/value heads
    x = x + MLP(N₂(x))                 plain: act(h W_fc + b_fc) W_proj + b_proj; gated: (act(h W_gate) ⊙ h W_fc) W_proj

(OLMo-2 has no N₁, N₂: x = x + N(Attention(x)), x = x + N(MLP(x)), the post-norms), then a final norm and the
unembedding, logits = N_f(x) W_U (W_U = W_Eᵀ when tied). An attention-only model ("A Mathematical Framework for
Transformer Circuits") has no norm and no MLP: x = x + Attention(x).

GPT-2 is the defaults. Every other family is a set of these fields, never a second model class (see
:mod:`attention.model.families` for how each checkpoint's config.json maps onto them).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .. import positions, rotation
from ..errors import AttentionError
from ..names import is_number, is_whole
from ..rotation import Rotation

ACTIVATIONS = ("gelu_new", "gelu", "relu", "silu")  # gelu_new: the tanh approximation; gelu: the exact erf form
NORMS = ("layernorm", "rmsnorm")
MLPS = ("plain", "gated")
LAYER_TYPES = ("full", "sliding")
QK_NORM_SCOPES = ("head", "all")  # QK-norm over each head's d_head columns, or over all heads' at once (OLMo-2)
MAX_LAYERS = 96
MAX_WIDTH = 16384
MAX_VOCAB = 1_000_000
MAX_CONTEXT = 1 << 20  # only bounds the ids one pass takes: rotary models allocate nothing per context position


@dataclass(frozen=True)
class Config(Rotation):
    """Sizes and parts of a model.

    Sizes: vocab_size; n_ctx (the most tokens one pass may take); d_model; n_layers; n_heads (query heads);
    n_kv_heads: key/value heads, dividing n_heads (grouped-query attention; None: as many as n_heads);
    head_dim: each head's width (None: d_model / n_heads, which must then divide); d_mlp: the MLP's hidden width
    (unused when attention_only).

    Parts: attention_only: no norm, no MLP; norm: "layernorm" (GPT-2, GPT-NeoX) or "rmsnorm" (Llama, Qwen, Mistral,
    Gemma); norm_offset: RMSNorm scales by norm_offset + γ (0; Gemma stores γ − 1, so 1 there); ln_eps: the norm's ε;
    pre_norms: the norms N₁ and N₂ on the stream before the attention and the MLP (True but for OLMo-2, which reads
    the stream itself); post_norms: a norm also on the attention's output and on the MLP's output before each is
    added (Gemma 3, OLMo-2);
    mlp: "plain" or "gated"; activation: the MLP's nonlinearity (see ACTIVATIONS; "gelu_new" is also
    Gemma's gelu_pytorch_tanh); parallel_residual: x + Attention(N₁(x)) + MLP(N₂(x)), both from the same x
    (GPT-NeoX's use_parallel_residual); tied: W_U = W_Eᵀ; embed_scale: x₀ = W_E[ids] · embed_scale (Gemma: √d_model).

    Biases: bias: W_o and the MLP have biases (GPT-2, GPT-NeoX), and so do W_q, W_k and W_v unless qkv_bias says
    otherwise; qkv_bias: W_q, W_k and W_v have biases (None: as bias; True with bias False: Qwen2).

    Attention: scale_attn: divide the scores by √d_head (GPT-2's scale_attn_weights); query_pre_attn_scalar: divide
    by √query_pre_attn_scalar instead (Gemma); scale_by_layer: GPT-2's scale_attn_by_inverse_layer_idx (layer l's
    scores are further divided by l + 1); qk_norm: an RMSNorm of the queries and of the keys before the rotation,
    with gains q_norm.g and k_norm.g; qk_norm_scope: "head", each head's own d_head columns, one d_head-wide gain
    shared by the heads (Qwen3, Gemma 3), or "all", every head's columns at once before the split into heads, the
    gains H·d_head and G·d_head wide (OLMo-2); layer_types: one "full" or "sliding" per layer
    (() means every layer "full"); sliding_window: w, the keys a "sliding" layer's query sees: itself and the w − 1
    before it (Mistral, Gemma 3's local layers).

    Positions: positions: "learned" (a matrix W_pos added to the token embeddings, GPT-2), "sinusoidal" (added
    likewise), "rotary" (each head's Q and K turned) or "none"; the rotation's eight fields (rope_theta,
    rotary_layout, rotary_dims, rope_scaling and its factors) are a :class:`~attention.rotation.Rotation`'s, declared
    and checked there and shared with a pass's Options (GPT-NeoX turns rotary_pct · d_head columns); rotary_dims is
    at most d_head here; rope_local_theta: the base of the "sliding" layers, unscaled (Gemma 3's
    rope_local_base_freq; None: rope_theta and its scaling).
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
    n_kv_heads: int | None = None
    head_dim: int | None = None
    norm: str = "layernorm"
    norm_offset: float = 0.0
    pre_norms: bool = True
    post_norms: bool = False
    mlp: str = "plain"
    parallel_residual: bool = False
    embed_scale: float = 1.0
    qkv_bias: bool | None = None
    qk_norm: bool = False
    qk_norm_scope: str = "head"
    query_pre_attn_scalar: float | None = None
    layer_types: tuple[str, ...] = ()
    sliding_window: int = 0
    rope_local_theta: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.layer_types, list):  # as JSON gives it back
            object.__setattr__(self, "layer_types", tuple(self.layer_types))

    @property
    def d_head(self) -> int:
        """The width of one head's queries, keys and values: head_dim, or d_model / n_heads."""
        return self.d_model // self.n_heads if self.head_dim is None else self.head_dim

    @property
    def kv_heads(self) -> int:
        """The number of key/value heads: n_kv_heads, or n_heads."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def has_qkv_bias(self) -> bool:
        """Whether W_q, W_k and W_v have biases (then the attention reads [h, 1] and their last row is the bias)."""
        return self.bias if self.qkv_bias is None else self.qkv_bias

    def layer_type(self, layer: int) -> str:
        """ "full" or "sliding": whether layer ``layer`` sees every earlier key or only the last sliding_window."""
        return self.layer_types[layer] if self.layer_types else "full"

    def scale(self, layer: int) -> float:
        """The factor layer ``layer``'s scores are multiplied by: 1/√query_pre_attn_scalar, 1/√d_head or 1, then
        ÷ (layer + 1) with scale_by_layer."""
        if self.query_pre_attn_scalar is not None:
            base = 1.0 / math.sqrt(self.query_pre_attn_scalar)
        else:
            base = 1.0 / math.sqrt(self.d_head) if self.scale_attn else 1.0
        return base / (layer + 1) if self.scale_by_layer else base

    def replace(self, **changes: object) -> Config:
        """A copy with some fields changed, checked."""
        return dataclasses.replace(self, **changes).validate()  # type: ignore[arg-type]

    def validate(self, where: str = "config") -> Config:
        """Raise AttentionError naming the first field out of range (``field`` is its name); return self."""
        _check_sizes(self, where)
        for name, choices in (
            ("positions", positions.KINDS),
            ("activation", ACTIVATIONS),
            ("norm", NORMS),
            ("mlp", MLPS),
            ("qk_norm_scope", QK_NORM_SCOPES),
        ):
            if getattr(self, name) not in choices:
                raise AttentionError(
                    f"{where}.{name} must be one of {', '.join(choices)}; got {getattr(self, name)!r}", field=name
                )
        rotation.check(self, f"{where}.")  # the rotation's eight fields and the rule that ties two
        _check_numbers(self, where)
        _check_layers(self, where)
        return self


def _check_sizes(c: Config, where: str) -> None:
    """The whole-number sizes are in range and fit together (heads divide d_model or head_dim is given)."""
    for name, value, low, high in (
        ("vocab_size", c.vocab_size, 1, MAX_VOCAB),
        ("n_ctx", c.n_ctx, 1, MAX_CONTEXT),
        ("d_model", c.d_model, 1, MAX_WIDTH),
        ("n_layers", c.n_layers, 1, MAX_LAYERS),
        ("n_heads", c.n_heads, 1, MAX_WIDTH),
        ("d_mlp", c.d_mlp, 0, 8 * MAX_WIDTH),
        ("n_kv_heads", c.kv_heads, 1, c.n_heads if is_whole(c.n_heads) else MAX_WIDTH),
        ("head_dim", c.d_head if c.head_dim is not None else 1, 1, MAX_WIDTH),
        ("sliding_window", c.sliding_window, 0, MAX_CONTEXT),
    ):
        if not (is_whole(value) and low <= value <= high):
            raise AttentionError(
                f"{where}.{name} must be a whole number from {low} to {high}; got {value!r}", field=name
            )
    if c.head_dim is None and c.d_model % c.n_heads:
        raise AttentionError(
            f"{where}.d_model = {c.d_model} does not divide into n_heads = {c.n_heads} heads", field="n_heads"
        )
    if c.n_heads % c.kv_heads:
        raise AttentionError(
            f"{where}.n_kv_heads = {c.kv_heads} must divide n_heads = {c.n_heads} (each key/value head serves the "
            "same number of query heads)",
            field="n_kv_heads",
        )
    if not c.attention_only and c.d_mlp < 1:
        raise AttentionError(f"{where}.d_mlp must be at least 1 when the model has MLPs", field="d_mlp")
    r = c.rotary_dims
    if r is not None and not (is_whole(r) and r % 2 == 0 and 2 <= r <= c.d_head):
        raise AttentionError(
            f"{where}.rotary_dims must be an even whole number from 2 to d_head = {c.d_head}; got {c.rotary_dims!r}",
            field="rotary_dims",
        )  # the rotation's own rule (even, ≥ 2) is checked with the others; a model's heads bound it here


def _check_numbers(c: Config, where: str) -> None:
    """The real-valued fields: ε in (0, 1), the local base and the scales finite and > 0, the offset finite (the
    rotation's base and factors are the rotation's own rules)."""

    def positive(value: object) -> bool:
        return is_number(value) and math.isfinite(value) and value > 0  # type: ignore[arg-type]

    if not (is_number(c.ln_eps) and 0 < c.ln_eps < 1):
        raise AttentionError(f"{where}.ln_eps must be a number between 0 and 1; got {c.ln_eps!r}", field="ln_eps")
    if not positive(c.embed_scale):
        raise AttentionError(
            f"{where}.embed_scale must be a finite number > 0; got {c.embed_scale!r}", field="embed_scale"
        )
    for name in ("rope_local_theta", "query_pre_attn_scalar"):
        if getattr(c, name) is not None and not positive(getattr(c, name)):
            raise AttentionError(
                f"{where}.{name} must be a finite number > 0 (or None); got {getattr(c, name)!r}", field=name
            )
    if not (is_number(c.norm_offset) and math.isfinite(c.norm_offset)):
        raise AttentionError(f"{where}.norm_offset must be a finite number; got {c.norm_offset!r}", field="norm_offset")


def _check_layers(c: Config, where: str) -> None:
    """layer_types: empty or one "full"/"sliding" per layer; a "sliding" layer needs a window of at least 1."""
    types = c.layer_types
    if types and (len(types) != c.n_layers or any(t not in LAYER_TYPES for t in types)):
        raise AttentionError(
            f"{where}.layer_types must list {c.n_layers} layer types, each 'full' or 'sliding'; got {types!r}"[:300],
            field="layer_types",
        )
    if "sliding" in types and c.sliding_window < 1:
        raise AttentionError(
            f"{where}.sliding_window must be at least 1 when a layer is 'sliding'", field="sliding_window"
        )
