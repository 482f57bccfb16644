"""Edits as a difference (link format d1): only the changed cells of a matrix, against the matrices the rest of the
address rebuilds; restored bit-exact, short for a few cells of a large matrix, every bad token refused by name."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from attention import AttentionError
from attention.io import links
from attention.io.links import DIFF, MAX_LINK_CELLS, decode_any, decode_diff, encode_diff, encode_shortest

BASE = {"W_k": np.random.RandomState(0).randn(32, 16), "X": np.random.RandomState(1).randn(24, 32)}


def _edited(**cells: float) -> dict[str, np.ndarray]:
    out = {n: m.copy() for n, m in BASE.items()}
    for spec, value in cells.items():  # "W_k_0_0" -> W_k[0, 0]
        name, r, c = spec.rsplit("_", 2)
        out[name][int(r), int(c)] = value
    return out


def test_one_cell_of_a_large_matrix_is_a_short_token_restored_bit_exact() -> None:
    edited = _edited(W_k_0_0=40.0)
    token = encode_diff({"W_k": edited["W_k"]}, BASE)
    assert token.startswith("d1.") and len(token) <= 60, token  # whole W_k (512 numbers) took about 5,400
    back = decode_diff(token, BASE)
    assert back["W_k"].tobytes() == edited["W_k"].tobytes() and back["W_k"] is not BASE["W_k"]
    assert BASE["W_k"][0, 0] != 40.0  # the base is not changed


def test_the_exact_bits_survive_negative_zero_and_subnormals() -> None:
    edited = {n: m.copy() for n, m in BASE.items()}
    edited["X"][3, 4], edited["X"][5, 6], edited["W_k"][31, 15] = -0.0, 5e-324, np.nextafter(BASE["W_k"][31, 15], 9)
    base = {n: m.copy() for n, m in BASE.items()}
    base["X"][3, 4] = 0.0  # -0.0 differs from 0.0 by its bits only: it still travels
    back = decode_diff(encode_diff(edited, base), base)
    for n in edited:
        assert back[n].tobytes() == edited[n].tobytes(), n


def test_unchanged_matrices_and_no_change() -> None:
    token = encode_diff({"W_k": BASE["W_k"]}, BASE)
    assert decode_diff(token, BASE)["W_k"].tobytes() == BASE["W_k"].tobytes()


def test_more_changed_cells_than_a_link_carries_are_refused() -> None:
    many = {"X": BASE["X"] + 1.0}  # 768 cells changed
    with pytest.raises(AttentionError, match=f"more than {MAX_LINK_CELLS} numbers"):
        encode_diff(many, BASE)
    with pytest.raises(AttentionError, match="more than 512"):
        encode_shortest(many, BASE)  # whole X is 768 numbers too: neither format carries it


def test_the_shortest_form_keeps_short_whole_matrices_and_otherwise_the_difference() -> None:
    small = {"W_q": np.eye(3)}
    assert encode_shortest({"W_q": np.eye(3) * 2}, small).startswith("v1.")  # a short v1: as older links hold it
    assert encode_shortest({"W_k": _edited(W_k_1_2=3.0)["W_k"]}, BASE).startswith("d1.")
    for token in (encode_shortest({"W_q": np.eye(3) * 2}, small), links.encode_edits({"W_q": np.eye(3) * 2})):
        assert decode_any(token, small)["W_q"].tobytes() == (np.eye(3) * 2).tobytes()


def _sealed(payload: bytes) -> str:
    """A d1 token around ``payload`` (count, then matrices), with a placeholder fingerprint after the count."""
    return DIFF.seal(payload[:1] + bytes(8) * bool(payload) + payload[1:])


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        (b"", "it is empty"),
        (bytes([7]), "at most 6"),
        (bytes([1, 4, 2]) + struct.pack(">2HI", 32, 16, 0), "this state does not have"),  # W_o: not in the base
        (bytes([1, 2, 2]) + struct.pack(">2HI", 16, 32, 0), "the current W_k is 32 × 16"),
        (bytes([1, 2, 2]) + struct.pack(">2HI", 32, 16, 1) + struct.pack(">I", 512) + struct.pack("<d", 1), "range"),
        (bytes([1, 2, 2]) + struct.pack(">2HI", 32, 16, 2) + struct.pack(">2I", 5, 5) + struct.pack("<2d", 1, 2),
         "out of order"),
        (bytes([1, 2, 2]) + struct.pack(">2HI", 32, 16, 1) + struct.pack(">I", 5) + struct.pack("<d", np.nan), "NaN"),
        (bytes([1, 2, 2]) + struct.pack(">2HI", 32, 16, 3) + struct.pack(">I", 5), "stops early"),
        (bytes([1, 2, 2]) + struct.pack(">2HI", 32, 16, 600), "more than 512"),
        (bytes([2, 2, 2]) + struct.pack(">2HI", 32, 16, 0) + bytes([2, 2]) + struct.pack(">2HI", 32, 16, 0), "twice"),
        (bytes([1, 2, 2]) + struct.pack(">2HI", 32, 16, 0) + b"\x00", "unexpected bytes"),
        (bytes([1, 2, 2, 0]), "cut short"),
        (bytes([1, 2, 2]) + struct.pack(">2HI", 32, 16, 0), "other starting numbers"),  # a fingerprint of nothing
    ],
)
def test_a_bad_payload_is_refused_by_name(payload: bytes, says: str) -> None:
    with pytest.raises(AttentionError, match=says):
        decode_diff(_sealed(payload), BASE)


def test_every_one_character_change_of_a_token_is_refused() -> None:
    token = encode_diff({"W_k": _edited(W_k_0_0=40.0)["W_k"]}, BASE)
    for k in range(3, len(token)):
        for ch in "A_-9":
            changed = token[:k] + ch + token[k + 1 :]
            if changed != token:
                with pytest.raises(AttentionError):
                    decode_diff(changed, BASE)
    with pytest.raises(AttentionError, match="characters long"):
        decode_diff("d1." + "A" * 20_000, BASE)  # refused before any decoding
    with pytest.raises(AttentionError, match="a version such as 'd1.'"):
        decode_diff(links.encode_edits({"W_q": np.eye(3)}), BASE)  # the other format, given to this reader


def test_a_link_made_on_other_starting_numbers_is_refused_and_changes_nothing() -> None:
    token = encode_diff({"W_k": _edited(W_k_0_0=40.0)["W_k"]}, BASE)
    later = {n: m.copy() for n, m in BASE.items()}
    later["W_k"][7, 3] += 1e-12  # a later version's preset: one number different in its last digits
    kept = {n: m.copy() for n, m in later.items()}
    with pytest.raises(AttentionError, match="other starting numbers.*nothing was changed"):
        decode_any(token, later)
    assert all(later[n].tobytes() == kept[n].tobytes() for n in later)
    assert decode_any(token, BASE)["W_k"][0, 0] == 40.0  # on its own numbers it is restored
    later["X"][0, 0] = 9.0  # a matrix the link does not carry may differ
    later["W_k"] = BASE["W_k"].copy()
    assert decode_any(token, later)["W_k"][0, 0] == 40.0


def test_a_v1_link_is_still_restored_whatever_the_starting_numbers() -> None:
    token = links.encode_edits({"W_q": np.eye(3) * 2})
    assert decode_any(token, {"W_q": np.ones((3, 3))})["W_q"].tobytes() == (np.eye(3) * 2).tobytes()


def test_changed_cells_are_counted_by_their_bits_as_a_link_carries_them() -> None:
    base, edited = np.zeros((2, 3)), np.zeros((2, 3))
    edited[0, 1], edited[1, 2] = -0.0, 5.0
    assert links.changed_cells(edited, base).tolist() == [1, 5]  # -0.0 == 0.0 by value, yet a link carries it
