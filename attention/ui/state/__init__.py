"""Every change to the session, as named functions called from widget callbacks: the one writer of the state.

The ``Session`` (:mod:`attention.ui.core.session`) changes only through the functions below (``load_preset``,
``edit_cells``, ``resize``, ``set_option`` ...), and those are called only from widget callbacks
(``on_change`` / ``on_click``), which Streamlit runs before the script: so every page, the sidebar included,
draws from the state as it is after the change, and no run changes state half-way or needs ``st.rerun()``.
A change that is refused leaves the session exactly as it was and leaves a message (:func:`say`) that the
page shows next to the control that caused it. The session's ``origin`` (the unedited preset) is set here too, with
the preset, seed or size; :mod:`.reshapes` holds the reshapes (shuffle, resize, W_o, P, key/value heads) that these
changes, and the address's rebuild of a session, apply.
"""

from .challenges import back_to_before, refuse_locked, set_tour, show_solution, start_challenge, stop_challenge
from .core import ensure, say, unsay
from .edits import edit_cells, replace_matrix, resize, resize_and_replace, set_projection, set_tokens, shuffle_tokens
from .family import set_setting, set_source, settings
from .learning import set_embeddings, set_learn, store_learned, use_identity, use_learned
from .options import set_custom_mask, set_heads, set_kv_heads, set_mask, set_option, set_positions, set_w_o
from .pins import clear_pin, hold_import, pin, renew_grids, set_tab, set_view, swap_pin
from .presets import (
    apply_preset,
    load_preset,
    open_head,
    reset,
    set_blank_shape,
    set_head_ablation,
    set_seed,
    switch_head,
)

__all__ = [
    "apply_preset",
    "clear_pin",
    "edit_cells",
    "ensure",
    "hold_import",
    "load_preset",
    "open_head",
    "pin",
    "refuse_locked",
    "renew_grids",
    "replace_matrix",
    "reset",
    "resize",
    "resize_and_replace",
    "say",
    "set_blank_shape",
    "set_head_ablation",
    "set_custom_mask",
    "set_embeddings",
    "set_heads",
    "set_kv_heads",
    "set_learn",
    "set_mask",
    "set_option",
    "set_positions",
    "set_projection",
    "set_seed",
    "set_setting",
    "set_source",
    "set_tab",
    "set_tokens",
    "set_tour",
    "set_view",
    "set_w_o",
    "settings",
    "show_solution",
    "shuffle_tokens",
    "switch_head",
    "start_challenge",
    "back_to_before",
    "stop_challenge",
    "store_learned",
    "swap_pin",
    "unsay",
    "use_identity",
    "use_learned",
]
