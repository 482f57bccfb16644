"""The shareable link's edits: bit-exact round trips, and every kind of damage refused with a message."""

from __future__ import annotations

import base64
import hashlib
import struct
import time
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attention import AttentionError
from attention.io.links import MAX_LINK_CELLS, MAX_PAYLOAD_BYTES, MAX_TOKEN_CHARS, decode_edits, encode_edits

NAMES = ("X", "W_q", "W_k", "W_v")


def bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).view(np.uint64)


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(a[k].shape == b[k].shape and np.array_equal(bits(a[k]), bits(b[k])) for k in a)


def forge(payload: bytes, version: str = "v1", level: int = 9) -> str:
    """A token with a VALID checksum around any payload: what a tamperer who read the code could make."""
    compressed = zlib.compress(payload, level)
    digest = hashlib.sha256(b"attention-link/v1" + compressed).digest()[:8]
    return f"{version}." + base64.urlsafe_b64encode(digest + compressed).rstrip(b"=").decode()


def header(index: int, shape: tuple[int, ...]) -> bytes:
    return struct.pack(">BB", index, len(shape)) + struct.pack(f">{len(shape)}H", *shape)


def refused(match: str, token: str, **kwargs) -> None:
    with pytest.raises(AttentionError, match=match):
        decode_edits(token, **kwargs)


# ----------------------------------------------------------------------------------------- round trips

finite = st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=True)
special = st.sampled_from(
    [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 0.1 + 0.2, 1e-300]
)


@st.composite
def edit_sets(draw):
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=4))
    out, budget = {}, MAX_LINK_CELLS
    for name in names:
        rows = draw(st.integers(1, 12))
        cols = draw(st.integers(1, max(1, min(12, budget // rows))))
        if rows * cols > budget:
            break
        budget -= rows * cols
        out[name] = draw(arrays(np.float64, (rows, cols), elements=st.one_of(finite, special)))
    return out


@settings(max_examples=300, deadline=None)
@given(edits=edit_sets())
def test_round_trip_bit_exact(edits):
    token = encode_edits(edits)
    assert token.startswith("v1.")
    assert all(c.isalnum() or c in "-_." for c in token)  # URL-safe as is
    assert len(token) <= MAX_TOKEN_CHARS
    back = decode_edits(token)
    assert same(back, edits)
    assert all(a.dtype == np.float64 and a.flags.writeable for a in back.values())


def test_round_trip_special_values_and_batch_axis():
    edits = {"X": np.array([[[-0.0, 5e-324, 1e-300, -1.7976931348623157e308]]]), "W_v": np.array([[0.1 + 0.2]])}
    back = decode_edits(encode_edits(edits))
    assert same(back, edits) and back["X"].shape == (1, 1, 4)
    assert np.signbit(back["X"][0, 0, 0])


def test_full_budget_fits_in_a_url():
    rs = np.random.RandomState(0)
    edits = {"X": rs.randn(16, 8), "W_q": rs.randn(8, 16), "W_k": rs.randn(8, 16), "W_v": rs.randn(8, 16)}
    assert sum(a.size for a in edits.values()) == MAX_LINK_CELLS
    token = encode_edits(edits)
    assert len(token) < 6000
    assert same(decode_edits(token), edits)


def test_empty_edits_and_determinism():
    assert decode_edits(encode_edits({})) == {}
    e = {"W_q": np.eye(3)}
    assert encode_edits(e) == encode_edits({"W_q": np.eye(3)})


def test_encode_does_not_modify_its_input_and_accepts_ints():
    m = np.arange(6).reshape(2, 3)
    before = m.copy()
    back = decode_edits(encode_edits({"W_k": m}))
    assert np.array_equal(m, before) and back["W_k"].dtype == np.float64 and back["W_k"].tolist() == before.tolist()


def test_expected_shapes_are_checked():
    token = encode_edits({"W_q": np.zeros((3, 4))})
    assert decode_edits(token, expected_shapes={"W_q": (3, 4), "X": (3, 3)})["W_q"].shape == (3, 4)
    refused(r"its W_q is 3 × 4 but the current W_q is 4 × 4", token, expected_shapes={"W_q": (4, 4)})


# ------------------------------------------------------------------------------------- encode refusals


@pytest.mark.parametrize(
    "edits, match",
    [
        ({"W_out": np.zeros((2, 2))}, "can only carry"),
        ({"X": np.array([[1.0, np.nan]])}, "NaN or infinite"),
        ({"X": np.array([[1.0, -np.inf]])}, "NaN or infinite"),
        ({"X": np.zeros((0, 3))}, "not empty"),
        ({"X": np.zeros((1, 1, 1, 1))}, "1-D to 3-D"),
        ({"X": np.zeros((MAX_LINK_CELLS + 1, 1))}, f"more than {MAX_LINK_CELLS} numbers"),
        ({"X": np.zeros((16, 16)), "W_q": np.zeros((16, 16)), "W_k": np.zeros((1, 1))}, "too many for a link"),
        ({"X": [["a"]]}, "must be a matrix of numbers"),
    ],
)
def test_encode_refusals(edits, match):
    with pytest.raises(AttentionError, match=match):
        encode_edits(edits)


def test_encode_needs_a_mapping():
    with pytest.raises(AttentionError, match="mapping"):
        encode_edits([("X", np.zeros((1, 1)))])  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------ tampering

TOKEN = encode_edits({"X": np.array([[0.2, 0.9, 0.1], [0.8, 0.3, 0.7]]), "W_q": np.eye(3) * 0.9})


def test_every_single_character_change_is_detected():
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."
    for i in range(len(TOKEN)):
        for c in {alphabet[(alphabet.index(TOKEN[i]) + 1) % len(alphabet)], "A", "_"} - {TOKEN[i]}:
            bad = TOKEN[:i] + c + TOKEN[i + 1 :]
            with pytest.raises(AttentionError, match="the link's edits cannot be restored"):
                decode_edits(bad)


def test_flipped_character_message():
    i = len(TOKEN) // 2
    bad = TOKEN[:i] + ("B" if TOKEN[i] != "B" else "C") + TOKEN[i + 1 :]
    refused("the link was changed or cut short", bad)


@pytest.mark.parametrize("cut", [1, 2, 3, 4, 5, 10, 20])
def test_truncated(cut):
    refused("changed or cut short", TOKEN[:-cut])


@pytest.mark.parametrize(
    "token, match",
    [
        ("v2." + TOKEN[3:], "format 'v2'"),
        ("v0." + TOKEN[3:], "format 'v0'"),
        (TOKEN[3:], "version"),
        ("", "version"),
        ("v1.", "not valid base64url"),
        ("v1.!!!!", "not valid base64url"),
        ("v1.abc=", "not valid base64url"),
        ("v1.a b", "not valid base64url"),
        ("v1.A", "not valid base64url"),
        ("v1.AAAA", "too short"),
        ("v1.AAAAAAAAAAAAAAAAAAAA", "checksum"),
        ("hello world", "version"),
        ("<script>alert(1)</script>", "version"),
        ("v1.%2F%2F", "not valid base64url"),
    ],
)
def test_garbage(token, match):
    refused(match, token)


def test_non_text_token():
    refused("expected text", b"v1.abc")  # type: ignore[arg-type]


def test_huge_token_refused_before_decoding():
    start = time.perf_counter()
    refused("characters long", "v1." + "A" * 10_000_000)
    refused("characters long", "v1." + "A" * (MAX_TOKEN_CHARS - 2))
    assert time.perf_counter() - start < 0.5


def test_decompression_bomb_is_capped():
    bomb = forge(b"\x00" * (200 * 1024 * 1024), level=9)  # 200 MiB of zeros compress to ~200 KB...
    assert len(bomb) > MAX_TOKEN_CHARS
    refused("characters long", bomb)
    small_bomb = forge(b"\x01" + header(0, (1, 1)) + b"\x00" * (8 * 1024 * 1024))  # 8 MiB inflates from a short token
    assert len(small_bomb) <= MAX_TOKEN_CHARS
    start = time.perf_counter()
    refused(f"more than {MAX_PAYLOAD_BYTES:,} bytes", small_bomb)
    assert time.perf_counter() - start < 0.5


def zeros(n: int) -> bytes:
    return struct.pack(f"<{n}d", *([0.0] * n))


@pytest.mark.parametrize(
    "payload, match",
    [
        (b"", "empty"),
        (b"\x09", "claims 9 matrices"),
        (b"\x01", "middle of a matrix header"),
        (b"\x01" + bytes([7, 2]) + struct.pack(">2H", 1, 1) + zeros(1), "unknown matrix"),
        (b"\x02" + header(0, (1, 1)) + zeros(1) + header(0, (1, 1)) + zeros(1), "holds X twice"),
        (b"\x01" + bytes([1, 4]) + struct.pack(">4H", 1, 1, 1, 1) + zeros(1), "4 dimensions"),
        (b"\x01" + bytes([1, 0]) + zeros(1), "0 dimensions"),
        (b"\x01" + bytes([1, 2]) + b"\x00", "middle of W_q's shape"),
        (b"\x01" + header(1, (0, 3)), "empty"),
        (b"\x01" + header(1, (2, 2)) + zeros(3), "should hold 4 numbers but the data stops early"),
        (b"\x01" + header(1, (1, 1)) + zeros(1) + b"junk", "4 unexpected bytes"),
        (b"\x01" + header(1, (1, 1)) + struct.pack("<d", float("nan")), "NaN or infinite"),
        (b"\x01" + header(1, (1, 1)) + struct.pack("<d", float("inf")), "NaN or infinite"),
        (b"\x01" + header(0, (600, 1)) + zeros(600), f"unpacks to more than {MAX_PAYLOAD_BYTES:,} bytes"),
        (b"\x01" + header(0, (600, 1)) + zeros(10), f"more than {MAX_LINK_CELLS} numbers"),
        (b"\x02" + header(0, (400, 1)) + zeros(400) + header(1, (200, 1)), f"more than {MAX_LINK_CELLS} numbers"),
        (b"\x01" + header(0, (65535, 65535, 65535)), f"more than {MAX_LINK_CELLS} numbers"),
    ],
)
def test_forged_payloads_with_valid_checksums(payload, match):
    refused(match, forge(payload))


def test_forged_but_well_formed_payload_is_accepted():
    token = forge(b"\x01" + header(3, (1, 2)) + struct.pack("<2d", 1.5, -0.0))
    back = decode_edits(token)
    assert list(back) == ["W_v"] and back["W_v"].tolist() == [[1.5, -0.0]]


def test_trailing_data_after_the_zlib_stream():
    compressed = zlib.compress(b"\x00") + b"extra"
    digest = hashlib.sha256(b"attention-link/v1" + compressed).digest()[:8]
    token = "v1." + base64.urlsafe_b64encode(digest + compressed).rstrip(b"=").decode()
    refused("incomplete or has extra bytes", token)


def test_corrupt_zlib_with_valid_checksum():
    compressed = b"\x78\x9c\xff\xff\xff"
    digest = hashlib.sha256(b"attention-link/v1" + compressed).digest()[:8]
    token = "v1." + base64.urlsafe_b64encode(digest + compressed).rstrip(b"=").decode()
    refused("corrupt|incomplete", token)


# A token made by the dashboard before the link envelope was shared with the challenge links (X with -0.0 and a
# subnormal, W_q, W_o and P): it must open exactly as it did, and the same edits must still give the same token.
OLD_TOKEN = (
    "v1.9fJPgTZIUwl42mNhYAJC5lkzQeCkPQMENGg_K-jOEGJggIi_tDcGg8v2aWDwzJ4RqIeB-ewZEHgD04UBiJVnYWJgBLoCDH5AV"
    "TMdYAWJMkJ4B-wBG58nLA"
)


def test_a_link_made_by_the_earlier_code_still_opens_bit_exact():
    want = {
        "X": np.array([[0.2, -0.0, 1e-310], [0.8, 0.3, 0.7]]),
        "W_q": np.eye(3) * 0.9,
        "W_o": np.array([[1.5, -2.25]]),
        "P": np.array([[0.125]]),
    }
    back = decode_edits(OLD_TOKEN)
    assert list(back) == ["X", "W_q", "W_o", "P"]
    for name, arr in want.items():
        assert back[name].shape == arr.shape and back[name].tobytes() == arr.tobytes(), name
    assert encode_edits(want) == OLD_TOKEN
