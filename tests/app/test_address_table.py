"""The address as a table: every link parameter survives write -> read, a bad value of each is named and leaves the
rest, and literal links written by earlier versions still decode to the same state and are written back byte for
byte (the order of the parameters included: the shared link is their urlencoding)."""

from __future__ import annotations

from urllib.parse import urlencode

import numpy as np
import pytest

from attention.ui.address import params, url
from attention.ui.core import session as session_mod

# Links as the writer made them before the address became a table (each the parameters in the order written). Kept
# literally: a link shared then must open the same state now.
OLD_LINKS = [
    (('preset', 'she_likes_coffee'),),
    (('preset', 'the_cat_sat'), ('seed', '7')),
    (('preset', 'blank'), ('seed', '3'), ('size', '5x6x4')),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('proj', 'x_wt')),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('tokens', 'a dog ran')),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('tokens', 'a big dog ran far')),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('roll', '2')),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('dm', '6'), ('dk', '5'), ('dv', '3')),
    (('preset', 'i_am_batman'), ('softmax', 'global_max'), ('scale', 'none'), ('temp', '0.5')),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('scale', '2.5')),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('mask', 'causal+padding'), ('pad', '2')),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('mask', 'custom'), ('cmask', '100.110.111')),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('mask', 'window'), ('win', '2')),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('pos', 'sinusoidal')),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('pos', 'learned')),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('softmax', 'none'), ('pos', 'alibi')),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('pos', 'rotary')),
    (('preset', 'the_cat_sat_on_the_mat'), ('seed', '89299'), ('dk', '4'), ('dv', '4'), ('heads', '2'), ('kv', '1')),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('src', 'le chat noir')),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('wo', '1')),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('digits', 'full')),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('digits', '6')),
    (('preset', 'random_seed_42'), ('seed', '11'), ('mask', 'causal'), ('heads', '2'), ('wo', '1'), ('digits', '3')),
    (('preset', 'model'), ('mh', 'induction~2.1~4.17.9.4.17~1.2z')),
    (('preset', 'model'), ('mh', 'induction~1.2~1.2.3~')),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('edits',
        "v1.z-LoKslqyih42mNkYGJgZmBhgIAGBhTwwZ4BDZgYg8BldHEHVPWYNABHJwj7"
    )),
    (('preset', 'random_seed_42'), ('seed', '5'), ('dk', '3'), ('edits',
        "v1.Ji0XuVZxLwB42gFnAJj_AQECAAQAA8SKdMfOLvU_Jk5YIj9l3j_6K1VHVR4FQDPutrIe4vM_D-uI3nVs7D-AXSS7iy7-P20nZ"
        "BLuy_w_w8osSMWE6T-tzx6xcFTrP119ACo2cu8_Jvlqtfat2z_uCP4ONMzfP8I5L2Q"
    )),
    (('preset', 'the_cat_sat'), ('seed', '0'), ('playing',
        "c1.d9au7dYpsF142m2SwY7UMAyGX8XKpZdu2QHEoRLckeCCVgKE0MjTetqoaVJid4Zqte-O3bKwo5lb4t_5_NvOozumPKK42qEIR"
        "fEp3jU9hkCxo1c7Vzrfqsgo-5DSwPsDNoNGxUsgFT7jQFCoXIDpYDKgQPHQU6F5UyYmw0tP-0YpmqrhlFvKrt5V96XrEoZLUudPZ"
        "JBAyAL31TtIR_DC8M8jSNpKVPA9zTDiAtR6gRTDAl_3QwlaT8OS_W89KmtUPK_RgRau1EOToj5RmKsfnSyTtdNQCCphzrjo9Uy-6"
        "4U1ktN5G8P60PxqdWtk0uOH93o6YZgVoW6fSmdm8GAT-uHUjvtZut5Hm8Mnm5L6-VavZmg8UNv62FmLW_eebyjWK0xhZtDlHG8k6"
        "GyLEjg9t3jBw3DGhS-kG8BnyVAVfEHPBr96lFUgvq4jKVXwMbIQtiVMM_dXVED1AcecxlX6NVP-D6j_5sxG13kztK8BYwvtW8tZt"
        "7o5eJGx2zLeVPBwBdw6DzAl1j2faB1PpA7tsn4DlXQrL1x5qUH_K9DJQHHWEWfw8bYd-4R3u8o9_QFJTBMI"
    )),
]


def _decoded(pairs) -> session_mod.Session:
    s, notices = url.decode(dict(pairs))
    assert not notices, notices
    return s


@pytest.mark.parametrize("pairs", OLD_LINKS, ids=lambda p: "&".join(k for k, _ in p))
def test_an_old_link_decodes_and_is_written_back_byte_for_byte(pairs) -> None:
    q, notes = url.link(_decoded(pairs))
    assert urlencode(q) == urlencode(pairs)
    assert not notes


def test_old_links_decode_to_the_states_they_describe() -> None:
    """What each old link meant, read from the link itself (not from the code's output)."""
    s = _decoded(OLD_LINKS[4])
    assert s.tokens == ("a", "dog", "ran") and s.matrices["X"].shape[0] == 3
    s = _decoded(OLD_LINKS[7])
    assert (s.dims.d_model, s.dims.d_k, s.dims.d_v) == (6, 5, 3)
    s = _decoded(OLD_LINKS[8])
    assert (s.options.softmax, s.options.scale, s.options.temperature) == ("global_max", 1.0, 0.5)
    s = _decoded(OLD_LINKS[10])
    assert s.options.mask == ("causal", "padding") and s.options.padding == (False, True, False)
    s = _decoded(OLD_LINKS[11])
    assert s.options.custom_mask == ((True, False, False), (True, True, False), (True, True, True))
    s = _decoded(OLD_LINKS[17])
    assert (s.options.heads, s.options.kv) == (2, 1)
    assert _decoded(OLD_LINKS[18]).source == ("le", "chat", "noir")
    assert "W_o" in _decoded(OLD_LINKS[19]).matrices
    assert _decoded(OLD_LINKS[20]).digits is None and _decoded(OLD_LINKS[21]).digits == 6
    s = _decoded(OLD_LINKS[23])
    assert s.preset_id == session_mod.MODEL
    assert (s.model_head.model_id, s.model_head.layer, s.model_head.head) == ("induction", 1, 0)
    assert s.model_head.ids == (4, 17, 9, 4, 17) and s.model_head.ablations == ((0, 1, "zero"),)
    s, base = _decoded(OLD_LINKS[25]), _decoded(OLD_LINKS[25][:2])
    assert s.matrices["X"][0, 0] == 0.0 and np.signbit(s.matrices["X"][0, 0])  # -0.0, as edited
    assert s.matrices["X"][1, 1] == 0.1 + 0.2
    changed = s.matrices["X"] != base.matrices["X"]
    assert changed.sum() == 2 and changed[0, 0] and changed[1, 1]  # the two cells edited, no other
    assert _decoded(OLD_LINKS[27]).challenge.id == "sat_looks_back"


def test_what_cannot_travel_is_named() -> None:
    s = _decoded((("preset", "the_cat_sat"), ("digits", "3"), ("tokens", "a b c")))
    s.pin = session_mod.Pinned(s.tokens, dict(s.matrices), s.options, "A")
    s.epoch += 1
    q, notes = url.link(s)
    assert q == {"preset": "the_cat_sat", "seed": "0", "tokens": "a b c", "digits": "3"}
    assert notes == ["the pinned state A."]
    s.tokens, s.epoch = ("a b", "c", "d"), s.epoch + 1
    q, notes = url.link(s)
    assert q == {"preset": "the_cat_sat", "seed": "0", "digits": "3"}
    assert notes[0].startswith("the sentence (tokens with spaces in them")


# ----------------------------------------------------------------------------------------- the whole table


NEWER = {"qkn"}  # records newer than the links above, each round-tripped by a test of its own below


def test_every_parameter_of_the_table_is_in_an_old_link_that_round_trips() -> None:
    """Each record of the table is written and read back by at least one of the links above (all checked byte for
    byte), or by its own test (NEWER), and the address bar knows each one."""
    written = {k for pairs in OLD_LINKS for k, _ in pairs}
    assert written | NEWER == {p.name for p in params.PARAMS} and not written & NEWER
    assert {p.name for p in params.PARAMS} <= set(url.PARAMS)


def test_many_parameters_at_once_survive_write_then_read() -> None:
    s = _decoded(
        (("preset", "random_seed_42"), ("seed", "9"), ("proj", "x_wt"), ("tokens", "one two three four five"),
         ("dm", "5"), ("dk", "4"), ("dv", "4"), ("softmax", "none"), ("scale", "0.25"), ("temp", "2.0"),
         ("mask", "causal+padding"), ("pad", "1,3"), ("pos", "learned"), ("heads", "2"), ("kv", "1"),
         ("src", "ein zwei"), ("wo", "1"), ("digits", "full"))
    )  # fmt: skip
    s.matrices["X"] = s.matrices["X"] + 1.0
    s.epoch += 1
    q, notes = url.link(s)
    assert not notes and "edits" in q
    back = _decoded(tuple(q.items()))
    assert url.link(back)[0] == q
    assert (back.tokens, back.options, back.source, back.digits) == (s.tokens, s.options, s.source, s.digits)
    assert all(session_mod.identical(back.matrices[n], s.matrices[n]) for n in s.matrices)
    assert back.matrices.keys() == s.matrices.keys() == {"X", "W_q", "W_k", "W_v", "W_o", "P"}


def test_qk_norm_gains_edited_travel_exactly_and_a_bad_one_is_named(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """A Qwen3 head (a GGUF file the server lists, d_head 128) with two of its layer's gains edited: the link carries
    exactly those gains (each number's shortest exact text) and gives back the same options; gains of another width,
    or one that is not a finite number, are named and the head's own kept."""
    from attention.ui.core import models
    from tests.helpers import gguf_files

    monkeypatch.setenv("ATTENTION_MODELS", f"q3={gguf_files.write(tmp_path / 'q3.gguf', 'qwen3')}")
    ids = models.first_text("server:q3")[1]
    s = session_mod.head_session(models.HeadRef("server:q3", ids, 1, 0))
    own = s.options
    assert len(own.q_norm) == len(own.k_norm) == 128
    q_norm = (0.1 + 0.2, *own.q_norm[1:127], -1.5)
    s.options, s.epoch = own.replace(q_norm=q_norm), s.epoch + 1
    q, notes = url.link(s)
    assert q["qkn"] == "q:" + ",".join(repr(g) for g in q_norm) and not notes  # k_norm unedited: left out
    back = _decoded(tuple(q.items()))
    assert back.options == s.options and back.options.q_norm[0] == 0.30000000000000004
    assert url.link(back)[0] == q
    for bad, why in ((q["qkn"].rsplit(",", 1)[0], "not 128 finite numbers"), ("k:" + "nan," * 127 + "1", "k_norm")):
        again, notices = url.decode({**q, "qkn": bad})
        assert len(notices) == 1 and "QK-norm gains (qkn) were not restored" in notices[0] and why in notices[0]
        assert again.options == own


def test_qk_norm_gains_of_split_heads_travel_and_joining_them_gives_the_heads_own_back(tmp_path, monkeypatch) -> None:  # noqa: ANN001, E501
    """The same Qwen3 head split into 2 heads (each 64 columns wide, its gains fitted as the sidebar fits them) with a
    gain edited: the link (heads=2 and qkn) gives back the same options with no notice (the gains were checked against
    the width of 1 head and refused). Joined into 1 head again, the gains are the head's own past the kept 64: not an
    edit of the model's layer (it was padded with 1s, which changed every head of the layer)."""
    from attention.ui.core import models
    from attention.ui.state import reshapes
    from tests.helpers import gguf_files

    monkeypatch.setenv("ATTENTION_MODELS", f"q3={gguf_files.write(tmp_path / 'q3.gguf', 'qwen3')}")
    ids = models.first_text("server:q3")[1]
    s = session_mod.head_session(models.HeadRef("server:q3", ids, 1, 0))
    own = s.options
    s.options = own.replace(heads=2)
    assert reshapes.fit_gains(s, s.dims.d_k // 2) and len(s.options.q_norm) == 64
    s.options, s.epoch = s.options.replace(q_norm=(2.5, *s.options.q_norm[1:])), s.epoch + 1
    q, notes = url.link(s)
    assert q["heads"] == "2" and q["qkn"].startswith("q:2.5,") and not notes
    back, notices = url.decode(q)
    assert not notices, notices
    assert back.options == s.options
    back.options = back.options.replace(heads=1)
    reshapes.fit_gains(back, back.dims.d_k)
    assert back.options.q_norm == (2.5, *own.q_norm[1:]) and back.options.k_norm == own.k_norm


GOOD = {"preset": "the_cat_sat", "digits": "6", "src": "le chat"}
BAD = {  # one bad value of each parameter, and the preset it is read with when not the_cat_sat
    "preset": ("nope", None),
    "seed": ("x1", None),
    "size": ("0x9x9", "blank"),
    "mh": ("induction~9.9", "model"),
    "proj": ("x_y", None),
    "tokens": ("a " * 3000, None),
    "roll": ("99", None),
    "dm": ("0", None),
    "dk": ("-1", None),
    "dv": ("four", None),
    "softmax": ("softer", None),
    "scale": ("huge", None),
    "temp": ("0", None),
    "mask": ("maskless", None),
    "pad": ("9", None),
    "cmask": ("10.01", None),
    "pos": ("rope", None),
    "heads": ("7", None),
    "kv": ("5", None),
    "win": ("0", None),
    "src": ("<b>" * 2000, None),
    "wo": ("2", None),
    "digits": ("5", None),
    "qkn": ("q:1.5,2", None),  # the_cat_sat has no QK-norm gains
    "playing": ("c1.forged", None),
    "edits": ("v1.forged", None),
}


def test_the_bad_values_cover_the_table() -> None:
    assert set(BAD) == {p.name for p in params.PARAMS}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_value_of_each_parameter_is_named_and_leaves_the_rest(name: str) -> None:
    text, preset = BAD[name]
    query = {**GOOD, **({"preset": preset} if preset else {}), name: text}
    s, notices = url.decode(query)
    assert len(notices) == 1, notices
    assert notices[0].startswith(("The link's", "The link asked")), notices
    assert name in notices[0] or text[:8] in notices[0] or name in ("mh", "tokens", "playing", "edits", "temp")
    if name != "digits":
        assert s.digits == 6
    if name != "src":
        assert s.source == ("le", "chat")
    good, _ = url.decode({k: v for k, v in query.items() if k != name})
    if name not in ("preset", "mh", "size"):  # those choose the preset the rest is read with
        assert s.tokens == good.tokens and s.options == good.options
        assert all(session_mod.identical(s.matrices[n], good.matrices[n]) for n in good.matrices)
