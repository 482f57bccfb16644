"""Every head at once (AppTest): the Every head page's two downloads hold the weights of the run it shows, with an
ablation in place: the .npz's array against the engine run directly, each CSV read back with the page's token labels,
and both recording the model, the text and the ablations."""

from __future__ import annotations

import gc
import io
import json
import zipfile

import numpy as np

from attention.io.parse import read_matrix_csv
from attention.model import ablate, builtin
from attention.names import token_labels
from attention.ui.core import keys
from tests.helpers.apptest import app, head_button, no_exception, session

ENGINE = builtin("induction")  # a model of its own, not the page's


def _file(at, key: str) -> bytes:
    """The bytes a download button of the page holds (AppTest's in-memory media store)."""
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    for _ in range(3):  # Streamlit drops a run's files once later runs end: a fresh run makes the file again
        button = next(b for b in at.get("download_button") if b.proto.id.endswith(key) or key in b.proto.id)
        file_id = button.proto.url.rsplit("/", 1)[-1].split(".")[0]
        for store in (o for o in gc.get_objects() if isinstance(o, MemoryMediaFileStorage)):
            try:
                return store.get_file(file_id).content
            except Exception:  # another test's store
                continue
        at = at.run()
    raise AssertionError(f"{key}: no file")


def test_the_downloads_hold_every_heads_weights_of_the_run_shown() -> None:
    at = app("every_head")
    at = head_button(at, "toggle", 0, 1).click().run()  # layer 1 · head 2 ablated (zero)
    no_exception(at)
    ids = session(at).inside.ids
    assert session(at).inside.ablations == ((0, 1, "zero"),)
    want = ENGINE.run(list(ids), [ablate(0, 1, "zero")]).weights  # (2, 2, n, n)
    with np.load(io.BytesIO(_file(at, keys.inside_export("npz"))), allow_pickle=False) as f:
        np.testing.assert_allclose(f["weights"], want, rtol=0, atol=1e-12)
        about = json.loads(str(f["about"]))
        tokens = list(f["tokens"])
    assert about["model_id"] == "induction" and about["ids"] == list(ids)
    assert about["ablations"] == [{"layer": 1, "head": 2, "how": "zero"}]
    assert tokens == ENGINE.pieces(list(ids))  # the words of the shipped vocabulary, as the page shows them
    with zipfile.ZipFile(io.BytesIO(_file(at, keys.inside_export("zip")))) as z:
        assert json.loads(z.read("about.json")) == about
        for layer in range(2):
            for head in range(2):
                values, rows, cols = read_matrix_csv(z.read(f"layer{layer + 1}_head{head + 1}.csv"), "w")
                np.testing.assert_allclose(values, want[layer, head], rtol=0, atol=1e-12)
                assert rows == cols == token_labels(tokens)
    np.testing.assert_allclose(want[0, 1].sum(-1), 1.0, atol=1e-12)  # a weight matrix, rows summing to 1
