"""Every validation path raises attention.AttentionError, with a message that names what is wrong and where."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attention
from attention import AttentionError, steps

E2 = np.eye(2)
sa = attention.self_attention
sdpa = attention.scaled_dot_product_attention


def test_error_type_is_a_value_error():
    assert issubclass(AttentionError, ValueError)


# ---------------------------------------------------------------- cells


def test_non_numeric_cell_names_matrix_row_token_and_column():
    with pytest.raises(AttentionError, match=r"X row 1 \('she'\), column 2 is 'abc', which is not a number") as exc:
        sa([[1.0, "abc"], [2.0, 3.0]], E2, E2, E2, tokens=["she", "likes"])
    assert exc.value.matrix == "X" and exc.value.cell == (0, 1)


def test_non_numeric_cell_in_a_weight_matrix():
    with pytest.raises(AttentionError, match=r"W_v row 2, column 1 is 'x', which is not a number") as exc:
        sa(E2, E2, E2, [[1, 0], ["x", 1]])
    assert exc.value.matrix == "W_v" and exc.value.cell == (1, 0)


def test_non_numeric_cell_in_a_batch_names_the_batch_item():
    with pytest.raises(
        AttentionError, match=r"X batch item 1, row 2 \('b'\), column 2 is 'x', which is not a number"
    ) as exc:
        sa([[[1, 2], [3, "x"]]], E2, E2, E2, tokens=["a", "b"])
    assert exc.value.cell == (0, 1, 1)


def test_text_instead_of_a_matrix():
    with pytest.raises(AttentionError, match=r"X must be a matrix of numbers, not text"):
        sa("1 2; 3 4", E2, E2, E2)


def test_not_a_matrix_at_all():
    with pytest.raises(AttentionError, match=r"W_q must be a matrix of numbers; got object"):
        sa(E2, object(), E2, E2)


def test_nan_cell():
    with pytest.raises(
        AttentionError, match=r"X row 2 \('b'\), column 1 is NaN .*every value must be a finite number"
    ) as exc:
        sa([[1.0, 2.0], [math.nan, 3.0]], E2, E2, E2, tokens=["a", "b"])
    assert exc.value.cell == (1, 0)


def test_none_cell_is_reported_as_blank():
    with pytest.raises(AttentionError, match=r"W_k row 1, column 2 is NaN \(blank or not a number\)"):
        sa(E2, E2, [[1.0, None], [0.0, 1.0]], E2)


@pytest.mark.parametrize("value", [math.inf, -math.inf])
def test_infinite_cell(value):
    with pytest.raises(
        AttentionError, match=r"W_q row 2, column 2 is -?inf \(infinite\); every value must be a finite number"
    ):
        sa(E2, [[1.0, 0.0], [0.0, value]], E2, E2)


# ---------------------------------------------------------------- shapes


@pytest.mark.parametrize("X", [np.zeros((0, 2)), np.zeros((2, 0)), np.zeros((1, 0, 2))])
def test_empty_matrix(X):
    with pytest.raises(AttentionError, match=r"X is empty \(shape .*\); it needs at least one row and one column"):
        sa(X, E2, E2, E2)


def test_empty_list_is_not_a_matrix():
    with pytest.raises(AttentionError, match=r"X must be a 2-D or 3-D matrix; got shape \(0,\)"):
        sa([], E2, E2, E2)


def test_empty_token_list():
    with pytest.raises(AttentionError, match=r"X has 2 rows but there are 0 tokens; there must be one row per token"):
        sa(E2, E2, E2, E2, tokens=[])


def test_token_count_mismatch():
    with pytest.raises(AttentionError, match=r"X has 2 rows but there are 3 tokens"):
        sa(E2, E2, E2, E2, tokens=["a", "b", "c"])


def test_ragged_rows():
    with pytest.raises(
        AttentionError,
        match=r"X has rows of different lengths \(\[2, 3\]\); every row needs the same number of columns",
    ):
        sa([[1.0, 2.0], [1.0, 2.0, 3.0]], E2, E2, E2)


@pytest.mark.parametrize(
    ("X", "shape"), [([1.0, 2.0], r"\(2,\)"), (np.zeros((1, 1, 2, 2)), r"\(1, 1, 2, 2\)"), (3.0, r"\(\)")]
)
def test_wrong_ndim_for_X(X, shape):
    with pytest.raises(AttentionError, match=rf"X must be a 2-D or 3-D matrix; got shape {shape}"):
        sa(X, E2, E2, E2)


def test_wrong_ndim_for_W():
    with pytest.raises(AttentionError, match=r"W_k must be a 2-D matrix; got shape \(2, 2, 2\)"):
        sa(E2, E2, np.zeros((2, 2, 2)), E2)


def test_w_rows_must_equal_x_columns_x_w():
    with pytest.raises(
        AttentionError,
        match=r"W_q has 3 rows but X has 2 columns \(d_model\); W_q must be d_model × d_k \(X @ W\), got \(3, 4\)",
    ):
        sa(E2, np.zeros((3, 4)), E2, E2)


def test_w_columns_must_equal_x_columns_x_wt():
    with pytest.raises(
        AttentionError,
        match=r"W_v has 3 columns but X has 2 columns \(d_model\); W_v must be d_k × d_model \(X @ W.T\)",
    ):
        sa(E2, E2, E2, np.zeros((2, 3)), projection="x_wt")


def test_wq_wk_width_mismatch():
    with pytest.raises(
        AttentionError, match=r"W_q gives queries of width 3 but W_k gives keys of width 2; QKᵀ needs them equal"
    ) as exc:
        sa(E2, np.zeros((2, 3)), E2, E2)
    assert exc.value.matrix == "W_k"
    with pytest.raises(AttentionError, match=r"queries of width 2 but W_k gives keys of width 3"):
        sa(E2, E2, np.zeros((3, 2)), E2, projection="x_wt")


@pytest.mark.parametrize(
    ("W_q", "W_v", "name", "width"),
    [
        (np.zeros((2, 3)), np.zeros((2, 4)), "W_q", 3),
        (np.zeros((2, 4)), np.zeros((2, 3)), "W_v", 3),
    ],
)
def test_width_not_divisible_by_heads(W_q, W_v, name, width):
    pattern = rf"{name} gives width {width}, which does not divide into 2 heads; choose a width that is a multiple of 2"
    with pytest.raises(AttentionError, match=pattern):
        sa(E2, W_q, W_q, W_v, heads=2)


def test_split_heads_not_divisible():
    with pytest.raises(AttentionError, match=r"width 5 does not divide into 2 heads"):
        attention.split_heads(np.zeros((3, 5)), 2)


def test_w_o_rows_must_match_concatenated_width():
    with pytest.raises(AttentionError, match=r"W_o has 3 rows but the heads concatenate to width 2"):
        attention.multi_head(E2, E2, E2, E2, attention.Options(heads=2), W_o=np.eye(3))


@pytest.mark.parametrize("flags", [(True,), (), (False, False, True)])
def test_padding_flag_count_mismatch(flags):
    with pytest.raises(
        AttentionError, match=rf"the padding flags list {len(flags)} tokens but X has 2; give one flag per token"
    ):
        sa(E2, E2, E2, E2, mask="padding", padding=flags)


# ---------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("option", "value", "pattern"),
    [
        ("projection", "xw", r"projection must be 'x_w' \(X @ W\) or 'x_wt' \(X @ W.T\); got 'xw'"),
        ("projection", None, r"projection must be .*; got None"),
        ("softmax", "max", r"softmax must be 'row_max', 'global_max' or 'none'; got 'max'"),
        ("scale", 0, r"scale must be a finite number > 0 \(or None for 1/√d_k\); got 0"),
        ("scale", -1.5, r"scale must be a finite number > 0 .*got -1.5"),
        ("scale", math.nan, r"scale must be a finite number > 0 .*got nan"),
        ("scale", math.inf, r"scale must be a finite number > 0 .*got inf"),
        ("scale", "1", r"scale must be a finite number > 0 .*got '1'"),
        ("scale", True, r"scale must be a finite number > 0 .*got True"),
        ("temperature", 0, r"temperature must be a finite number > 0; got 0"),
        ("temperature", -2.0, r"temperature must be a finite number > 0; got -2.0"),
        ("temperature", math.nan, r"temperature must be a finite number > 0; got nan"),
        ("temperature", math.inf, r"temperature must be a finite number > 0; got inf"),
        ("temperature", "hot", r"temperature must be a finite number > 0; got 'hot'"),
        ("temperature", True, r"temperature must be a finite number > 0; got True"),
        ("mask", "diagonal", r"mask must be one of none, causal, padding, custom, window, causal\+padding, .*; got 'd"),
        ("heads", 0, r"heads must be a whole number from 1 to 256; got 0"),
        ("heads", -1, r"heads must be a whole number from 1 to 256; got -1"),
        ("heads", True, r"heads must be a whole number from 1 to 256; got True"),
        ("heads", 2.0, r"heads must be a whole number from 1 to 256; got 2.0"),
    ],
)
def test_bad_option_values(option, value, pattern):
    with pytest.raises(AttentionError, match=pattern):
        sa(E2, E2, E2, E2, **{option: value})
    with pytest.raises(AttentionError, match=pattern):
        attention.Options(**{option: value}).validate()


def test_numpy_scalars_are_accepted_as_options():
    t = sa(E2, E2, E2, E2, scale=np.float32(0.5), temperature=np.float64(2.0), heads=np.int64(1))
    assert t.scale == 0.5


def test_bad_softmax_variant_in_the_step_function():
    with pytest.raises(AttentionError, match=r"softmax variant must be 'row_max', 'global_max' or 'none'; got 'bad'"):
        steps.softmax(np.zeros((2, 2)), "bad")


# ---------------------------------------------------------------- numerical failures


def test_overflow_in_Q():
    with pytest.raises(
        AttentionError,
        match=r"Q overflows at row 1 \('a'\), column 1 \(value inf\): the values of X and W_q are too large",
    ) as exc:
        sa([[1e200, 1e200], [0.0, 0.0]], [[1e200, 0.0], [0.0, 1.0]], E2, E2, tokens=["a", "b"])
    assert exc.value.matrix == "Q" and exc.value.cell == (0, 0)


def test_overflow_in_V_names_W_v():
    with pytest.raises(AttentionError, match=r"V overflows at row 2 \('b'\), column 2 .*X and W_v are too large"):
        sa([[1.0, 0.0], [1e200, 1e200]], E2, E2, [[1.0, 1e200], [0.0, 1e200]], tokens=["a", "b"])


def test_overflow_in_scores():
    with pytest.raises(
        AttentionError,
        match=r"scores overflows at row 1 \('a'\), column 1 \('a'\) .*the values of Q and K are too large",
    ):
        sa([[1e160, 1e160], [0.0, 0.0]], E2, E2, E2, tokens=["a", "b"])


def test_overflow_when_scaling_up():
    with pytest.raises(
        AttentionError, match=r"scaled overflows at row 1 \('a'\), column 1 .*scores times the scale 10 are too large"
    ):
        sa([[1e154, 0.0], [0.0, 0.0]], E2, E2, E2, scale=10.0, tokens=["a", "b"])


def test_softmax_none_overflows_above_709_78():
    # scale 1: the scaled score of row 1 against itself is 27**2 = 729 > 709.78
    pattern = (
        r"softmax \(nothing subtracted\) overflows on row 1 \('she'\): the largest score there is 729.*exp\(709.78\)"
    )
    with pytest.raises(AttentionError, match=pattern) as exc:
        sa([[27.0, 0.0], [0.0, 0.0]], E2, E2, E2, tokens=["she", "likes"], softmax="none", scale=1.0)
    assert exc.value.matrix == "weights" and exc.value.cell == (0, 0)


def test_softmax_none_just_below_the_limit_is_fine():
    t = sa([[26.6, 0.0], [0.0, 0.0]], E2, E2, E2, softmax="none", scale=1.0)  # 707.56 < 709.78
    np.testing.assert_allclose(t.weights.sum(axis=-1), 1.0)


def test_softmax_global_max_underflows_on_a_row_far_below():
    # global max 1600 (row 1); row 2 is all 0, and exp(0 - 1600) == 0 for every cell: 0/0
    pattern = (
        r"softmax \(whole-matrix max subtracted\) underflows on row 2 \('cat'\): every score there "
        r".*subtracted value 1600"
    )
    with pytest.raises(AttentionError, match=pattern) as exc:
        sa([[40.0, 0.0], [0.0, 0.0]], E2, E2, E2, tokens=["The", "cat"], softmax="global_max", scale=1.0)
    assert exc.value.cell[0] == 1
    # the default row-max variant is fine on the same input
    t = sa([[40.0, 0.0], [0.0, 0.0]], E2, E2, E2, scale=1.0)
    assert np.allclose(t.weights[1], [0.5, 0.5])


def test_tiny_temperature_overflow_is_an_attention_error():
    with pytest.raises(
        AttentionError, match=r"softmax \(row max subtracted\) cannot weigh row 1 \('a'\): the score in column 1 is inf"
    ):
        sa([[1.0, 0.0], [0.0, 0.0]], E2, E2, E2, temperature=1e-310, tokens=["a", "b"])


# ---------------------------------------------------------------- masks


@pytest.mark.parametrize("shape", [(3, 3), (2,), (1, 2), (2, 2, 2)])
def test_custom_mask_wrong_shape(shape):
    with pytest.raises(AttentionError, match=r"mask must have shape \(2, 2\) \(queries × keys\); got"):
        sa(E2, E2, E2, E2, attn_mask=np.ones(shape, dtype=bool))


@pytest.mark.parametrize("mask", [np.ones((2, 2)), np.ones((2, 2), dtype=int), [[1, 0], [1, 1]]])
def test_custom_mask_must_be_boolean(mask):
    with pytest.raises(AttentionError, match=r"a custom mask must be boolean \(True = may attend\)"):
        sa(E2, E2, E2, E2, attn_mask=mask)


# ---------------------------------------------------------------- scaled_dot_product_attention


def test_sdpa_attn_mask_and_is_causal_together():
    with pytest.raises(AttentionError, match=r"give either attn_mask or is_causal=True, not both"):
        sdpa(E2, E2, E2, attn_mask=np.ones((2, 2), dtype=bool), is_causal=True)


def test_sdpa_q_k_width_mismatch():
    with pytest.raises(AttentionError, match=r"q has width 2 but k has width 3; they must match \(E\)"):
        sdpa(E2, np.zeros((2, 3)), E2)


def test_sdpa_k_v_rows_mismatch():
    with pytest.raises(AttentionError, match=r"k has 2 rows but v has 3; one value per key is needed"):
        sdpa(E2, E2, np.zeros((3, 2)))


def test_sdpa_mask_does_not_broadcast():
    with pytest.raises(AttentionError, match=r"attn_mask of shape \(3, 3\) does not broadcast to \(L, S\) = \(2, 2\)"):
        sdpa(E2, E2, E2, attn_mask=np.ones((3, 3), dtype=bool))


@pytest.mark.parametrize(
    "mask", [np.array([[0.0, math.nan], [0.0, 0.0]]), np.array([[-math.inf, math.nan], [0.0, 0.0]])]
)
def test_sdpa_float_mask_nan(mask):
    with pytest.raises(AttentionError, match=r"attn_mask row 1, column 2 is NaN"):
        sdpa(E2, E2, E2, attn_mask=mask)


def test_sdpa_float_mask_plus_inf():
    with pytest.raises(AttentionError, match=r"attn_mask row 2, column 1 is inf \(infinite\)"):
        sdpa(E2, E2, E2, attn_mask=np.array([[0.0, -math.inf], [math.inf, 0.0]]))


@pytest.mark.parametrize("scale", [math.nan, math.inf, "2", True])
def test_sdpa_bad_scale(scale):
    with pytest.raises(AttentionError, match=r"scale must be a finite number \(or None for 1/√E\)"):
        sdpa(E2, E2, E2, scale=scale)


def test_sdpa_non_finite_inputs():
    with pytest.raises(AttentionError, match=r"q row 1, column 1 is NaN"):
        sdpa([[math.nan, 0.0]], [[1.0, 0.0]], [[1.0]])
    with pytest.raises(AttentionError, match=r"k must be a 2-D or 3-D or 4-D matrix"):
        sdpa([[1.0]], [1.0], [[1.0]])


def test_sdpa_scores_overflow():
    with pytest.raises(
        AttentionError, match=r"scores overflows at row 1, column 1 .*the values of q and k are too large"
    ):
        sdpa([[1e200, 1e200]], [[1e200, 1e200]], [[1.0]])


# ---------------------------------------------------------------- presets and seeds


def test_unknown_preset_id():
    ids = "she_likes_coffee, i_am_batman, the_cat_sat, the_cat_sat_on_the_mat, random_seed_42"
    with pytest.raises(AttentionError, match=rf"unknown preset 'nope'; choose one of {ids}"):
        attention.load_preset("nope")


@pytest.mark.parametrize("preset_id", ["the_cat_sat", "random_seed_42", "she_likes_coffee"])
@pytest.mark.parametrize(
    ("seed", "shown"), [(-1, "-1"), (2**32, "4294967296"), (True, "True"), (1.5, "1.5"), ("3", "'3'")]
)
def test_bad_seeds(preset_id, seed, shown):
    with pytest.raises(AttentionError, match=rf"seed must be a whole number from 0 to 4294967295; got {shown}"):
        attention.load_preset(preset_id, seed=seed)


def test_numpy_integer_seed_is_accepted():
    assert attention.load_preset("the_cat_sat", seed=np.int64(0)).seed == 0


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        ((0, 4), r"n \(tokens\) must be a whole number from 1 to 2048; got 0"),
        ((3, 0), r"d_model must be a whole number from 1 to 256; got 0"),
        ((3, 4, 0), r"d_k must be a whole number from 1 to 256; got 0"),
        ((2.5, 4), r"n \(tokens\) must be a whole number from 1 to 2048; got 2.5"),
        ((5000, 4), r"n \(tokens\) must be a whole number from 1 to 2048; got 5000"),
    ],
)
def test_blank_bad_sizes(args, pattern):
    with pytest.raises(AttentionError, match=pattern):
        attention.blank(*args)


def test_blank_bad_seed_and_tokens():
    with pytest.raises(AttentionError, match=r"seed must be a whole number from 0 to 4294967295; got -1"):
        attention.blank(2, 2, seed=-1)
    with pytest.raises(AttentionError, match=r"1 tokens given for n = 2"):
        attention.blank(2, 2, tokens=["a"])
