"""Every family's tensor layout, round trip: a random model written as its checkpoint (tests/helpers/layouts.py, from
Hugging Face's modeling code, in numpy) and opened with attention.model.load comes back as the parameters it was
written from, every one. A swapped q and k, gate and up, or a fused block cut in the wrong order fails here.

The cases are every example of every family's record (attention.model.families.FAMILIES, through
tests/helpers/examples.py), so a family added there is read here with no edit; GPT-2, whose record has no example
(its config.json names its sizes its own way), has its own tiny config.json below.
"""

from __future__ import annotations

import numpy as np
import pytest

from attention.model import load, param_shapes
from attention.model.families import FAMILIES, read_config
from attention.model.tensornames import LAYOUTS
from tests.helpers.examples import TYPES, config_json
from tests.helpers.layouts import WRITERS, write_checkpoint

OWN = {  # a family whose record has no example: its tiny config.json, as its own keys name the sizes
    "gpt2": dict(model_type="gpt2", vocab_size=40, n_embd=16, n_layer=2, n_head=4, n_positions=12, n_inner=24,
                 tie_word_embeddings=False),
}  # fmt: skip
CASES = {**{name: config_json(name) for name in TYPES}, **OWN}


def _random(shapes: dict[str, tuple[int, ...]], seed: int) -> dict[str, np.ndarray]:
    """Every parameter drawn on its own, so two that trade places never agree."""
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal(shape) for name, shape in shapes.items()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_checkpoint_in_the_familys_own_layout_loads_to_the_parameters_it_was_written_from(tmp_path, case) -> None:
    raw = CASES[case]
    kind, config = read_config(raw)
    params = _random(param_shapes(config), seed=len(case))
    tensors = WRITERS[FAMILIES[kind].tensors](config, params)
    m = load(write_checkpoint(tmp_path / case, raw, tensors, config.vocab_size), dtype=np.float64)
    assert m.config == config and m.params.keys() == params.keys()
    for name, want in params.items():  # F64 in the file, only cut, reshaped and transposed: exactly equal
        np.testing.assert_array_equal(m.params[name], want, err_msg=f"{case}: {name}")


def test_every_layout_a_family_names_has_a_writer_and_a_case() -> None:
    """A family with a new layout needs its writer (from its modeling code) in tests/helpers/layouts.py."""
    named = {f.tensors for f in FAMILIES.values()}
    assert named <= set(LAYOUTS) and set(WRITERS) == set(LAYOUTS)
    cased = {FAMILIES[read_config(raw)[0]].tensors for raw in CASES.values()}
    assert cased == set(LAYOUTS)


def test_a_tensor_the_layout_does_not_have_is_named_in_the_error(tmp_path) -> None:
    """The loader does not pass over a tensor it has no place for (a writer with an extra one would be caught)."""
    raw = CASES["llama"]
    kind, config = read_config(raw)
    tensors = WRITERS[FAMILIES[kind].tensors](config, _random(param_shapes(config), seed=1))
    tensors["model.layers.0.self_attn.extra_proj.weight"] = np.zeros((2, 2))
    with pytest.raises(Exception, match="extra_proj"):
        load(write_checkpoint(tmp_path / "extra", raw, tensors, config.vocab_size))
