"""Every head's weights as one download (attention.io.heads_files): the .npz's arrays equal the run's weights and read
without pickle; each CSV of the zip reads back through the dashboard's own importer with the tokens as its row and
column labels; both record the model, the text and the ablations; both formats are ones the import reads."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest

from attention.errors import AttentionError
from attention.io import heads_files
from attention.io.parse import MATRIX_FORMATS, read_matrix_csv, read_upload
from attention.model import ablate, builtin
from attention.names import token_labels

TOKENS = ("the", "=cat", "2", "the", " sat", "on")  # a repeat, a formula start, a number, a space


@pytest.fixture(scope="module")
def measured() -> heads_files.Measured:
    m = builtin("induction")
    ids = (3, 7, 9, 3, 11, 5)
    weights = m.run(list(ids), [ablate(1, 0, "mean")]).weights  # (2, 2, 6, 6)
    return heads_files.Measured("The shipped induction model", "induction", TOKENS, ids, ((1, 0, "mean"),), weights)


def test_the_formats_written_are_formats_the_import_reads() -> None:
    assert set(heads_files.FORMATS) <= set(MATRIX_FORMATS)


def test_the_npz_holds_the_runs_weights_and_what_they_were_measured_on(measured) -> None:
    with np.load(io.BytesIO(heads_files.heads_npz(measured)), allow_pickle=False) as f:
        assert set(f.files) == {"weights", "tokens", "ids", "about"}
        assert f["weights"].dtype == np.float64 and f["weights"].shape == (2, 2, 6, 6)
        assert np.array_equal(f["weights"], measured.weights)  # the same numbers, stored: no arithmetic between
        assert list(f["tokens"]) == list(TOKENS) and list(f["ids"]) == [3, 7, 9, 3, 11, 5]
        about = json.loads(str(f["about"]))
    assert about["model"] == "The shipped induction model" and about["model_id"] == "induction"
    assert about["text"] == list(TOKENS) and about["ids"] == [3, 7, 9, 3, 11, 5]
    assert about["ablations"] == [{"layer": 2, "head": 1, "how": "mean"}]
    assert about["shape"] == {"layers": 2, "heads": 2, "queries": 6, "keys": 6}


def test_each_csv_reads_back_with_the_tokens_as_labels(measured) -> None:
    with zipfile.ZipFile(io.BytesIO(heads_files.heads_zip(measured))) as z:
        names = z.namelist()
        assert names == [f"layer{la}_head{h}.csv" for la in (1, 2) for h in (1, 2)] + ["about.json", "README.txt"]
        about = json.loads(z.read("about.json"))
        readme = z.read("README.txt").decode("utf-8")
        for layer in range(2):
            for head in range(2):
                values, rows, cols = read_matrix_csv(z.read(heads_files.head_file(layer, head)), "head", (6, 6))
                assert np.array_equal(values, measured.weights[layer, head])  # repr-exact text, read back
                assert rows == cols == token_labels(list(TOKENS))  # labels, a repeat numbered, "=cat" and "2" kept
                assert rows[1] == "=cat" and rows[2] == "2" and len(set(rows)) == 6
        one = read_upload(z.read("layer2_head1.csv"), "layer2_head1.csv", "weights", (6, 6))  # the uploader reads it
        assert np.array_equal(one, measured.weights[1, 0])
    assert about["ablations"] == [{"layer": 2, "head": 1, "how": "mean"}] and about["text"] == list(TOKENS)
    assert "layer 2 · head 1 (mean)" in readme and "The shipped induction model (2 layers × 2 heads)" in readme


def test_weights_of_the_wrong_shape_are_refused_by_name() -> None:
    with pytest.raises(AttentionError, match=r"\(layers, heads, n, n\) for 3 tokens"):
        heads_files.Measured("m", "m", ("a", "b", "c"), (1, 2, 3), (), np.zeros((2, 2, 4, 4)))
