"""Each preset reproduces every number its document prints (to within 1e-8).

The expected numbers below are TYPED IN from the documents in ../shared/seeds (printed to 8 decimals);
they are never read from presets/*.json nor captured from the engine. Each test also checks that the
preset file's own ``expected`` section agrees with these typed numbers, so the file is right too.
"""

from __future__ import annotations

import numpy as np
import pytest

import attention
from attention.shapes import dot_shape, matmul_shape

TOL = 1e-8

# ---------------------------------------------------------------- 000 she_likes_coffee
DOC000 = {
    "X": [[0.2, 0.9, 0.1, 0.5], [0.8, 0.3, 0.7, 0.2], [0.4, 0.6, 0.3, 0.9]],
    "W_q": [[0.9, 0.1, 0.1, 0.1], [0.1, 0.9, 0.1, 0.1], [0.1, 0.1, 0.9, 0.1], [0.1, 0.1, 0.1, 0.9]],
    "W_k": [[0.9, 0.1, 0.1, 0.1], [0.1, 0.9, 0.1, 0.1], [0.1, 0.1, 0.9, 0.1], [0.1, 0.1, 0.1, 0.9]],
    "W_v": [[0.8, 0.2, 0.1, 0.1], [0.2, 0.8, 0.2, 0.1], [0.1, 0.2, 0.8, 0.1], [0.1, 0.1, 0.1, 0.9]],
    "Q": [[0.33, 0.89, 0.25, 0.57], [0.84, 0.44, 0.76, 0.36], [0.54, 0.7, 0.46, 0.94]],
    # The document prints K.T; this is that print transposed back (checked against K.T below too).
    "K.T": [[0.33, 0.84, 0.54], [0.89, 0.44, 0.7], [0.25, 0.76, 0.46], [0.57, 0.36, 0.94]],
    "scores": [[1.2884, 1.064, 1.452], [1.064, 1.6064, 1.4496], [1.452, 1.4496, 1.8768]],
    "scaled": [[0.6442, 0.532, 0.726], [0.532, 0.8032, 0.7248], [0.726, 0.7248, 0.9384]],
    "weights": [
        [0.33567137, 0.30004505, 0.36428358],
        [0.28375415, 0.37215416, 0.34409169],
        [0.30907667, 0.308706, 0.38221733],
    ],
    "output": [
        [0.57530294, 0.70527381, 0.50530294, 0.64177546],
        [0.60019479, 0.68822737, 0.53019479, 0.61916155],
        [0.58155011, 0.7007833, 0.51155011, 0.64659215],
    ],
}

# ---------------------------------------------------------------- 001 i_am_batman
DOC001 = {
    "X": [[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]],
    "W_q": [[1.0, 2.0], [3.0, 4.0]],
    "W_k": [[0.5, 1.0], [1.5, 1.0]],
    "W_v": [[1.0, 0.5], [0.5, 1.0]],
    "Q": [[1.0, 3.0], [0.0, 0.0], [2.0, 4.0]],
    "K": [[0.5, 1.5], [0.0, 0.0], [1.0, 1.0]],
    "V": [[1.0, 0.5], [0.0, 0.0], [0.5, 1.0]],
    "scores": [[5.0, 0.0, 4.0], [0.0, 0.0, 0.0], [7.0, 0.0, 6.0]],
    "scaled": [[3.53553391, 0.0, 2.82842712], [0.0, 0.0, 0.0], [4.94974747, 0.0, 4.24264069]],
    "weights": [
        [0.65693877, 0.01914529, 0.32391594],
        [0.33333333, 0.33333333, 0.33333333],
        [0.66659828, 0.00472298, 0.32867874],
    ],
    "output": [[0.81889674, 0.65238532], [0.5, 0.5], [0.83093765, 0.66197788]],
}

# ---------------------------------------------------------------- 002 the_cat_sat
DOC002 = {
    "X": [[1.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 2.0], [1.0, 1.0, 1.0, 1.0]],
    "W_q": [
        [0.5488135, 0.71518937, 0.60276338, 0.54488318],
        [0.4236548, 0.64589411, 0.43758721, 0.891773],
        [0.96366276, 0.38344152, 0.79172504, 0.52889492],
        [0.56804456, 0.92559664, 0.07103606, 0.0871293],
    ],
    "W_k": [
        [0.0202184, 0.83261985, 0.77815675, 0.87001215],
        [0.97861834, 0.79915856, 0.46147936, 0.78052918],
        [0.11827443, 0.63992102, 0.14335329, 0.94466892],
        [0.52184832, 0.41466194, 0.26455561, 0.77423369],
    ],
    "W_v": [
        [0.45615033, 0.56843395, 0.0187898, 0.6176355],
        [0.61209572, 0.616934, 0.94374808, 0.6818203],
        [0.3595079, 0.43703195, 0.6976312, 0.06022547],
        [0.66676672, 0.67063787, 0.21038256, 0.1289263],
    ],
    "Q": [
        [1.51247626, 1.09863089, 1.39448841, 1.0737781],
        [1.98339872, 3.1429815, 1.01724654, 1.9578046],
        [2.50417562, 2.67012164, 1.90311168, 2.0526804],
    ],
    "K": [
        [0.13849282, 1.47254087, 0.92151004, 1.81468107],
        [3.00093333, 2.42764101, 1.45206995, 3.10952573],
        [1.63895949, 2.68636137, 1.64754501, 3.36944393],
    ],
    # Printed as "Raw attention scores (Q·Kᵀ / sqrt(dk))": already scaled.
    "scaled": [
        [2.53042292, 6.28487859, 5.67286222],
        [4.69652452, 10.57351751, 9.98328327],
        [4.87868518, 11.57163735, 10.66450385],
    ],
    "weights": [
        [0.01495411, 0.63870437, 0.34634152],
        [0.00180039, 0.64226049, 0.35593913],
        [0.00088234, 0.71178464, 0.28733302],
    ],
    "output": [
        [2.37124698, 2.45396559, 2.13285971, 1.56135821],
        [2.38971598, 2.47190516, 2.14959736, 1.5724951],
        [2.42309392, 2.49270038, 2.1810883, 1.58247816],
    ],
}

# ---------------------------------------------------------------- 003 the_cat_sat_on_the_mat
DOC003_TOKENS = ("The", "cat", "sat", "on", "the", "mat")
DOC003_SHAPES = {
    "X": (1, 6, 8),
    "W": (8, 8),
    "Q": (1, 6, 8),
    "scores_np_dot": (1, 6, 1, 6),
    "output_printed": (1, 6, 1, 8),
}

# ---------------------------------------------------------------- 004 random_seed_42
DOC004 = {
    "X": [
        [0.37454012, 0.95071431, 0.73199394, 0.59865848],
        [0.15601864, 0.15599452, 0.05808361, 0.86617615],
        [0.60111501, 0.70807258, 0.02058449, 0.96990985],
    ],
    "weights": [
        [0.52735889, 0.11510842, 0.35753269],
        [0.43524369, 0.19971446, 0.36504185],
        [0.5060941, 0.12923692, 0.36466898],
    ],
    "output": [
        [0.9770141, 0.93531103, 1.15681926, 1.43938704],
        [0.87857753, 0.86060494, 1.04849229, 1.32790919],
        [0.9564023, 0.92013827, 1.13535784, 1.41721063],
    ],
}

TOKENS = {
    "she_likes_coffee": ("she", "likes", "coffee"),
    "i_am_batman": ("I", "am", "Batman"),
    "the_cat_sat": ("The", "cat", "sat"),
    "the_cat_sat_on_the_mat": DOC003_TOKENS,
}


def close(actual, expected, what: str) -> None:
    actual, expected = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    err = float(np.max(np.abs(actual - expected)))
    assert err <= TOL, f"{what}: largest difference {err:.3g} > {TOL}"


def doc_numbers(preset_id: str) -> dict[str, list]:
    if preset_id == "she_likes_coffee":
        d = {k: v for k, v in DOC000.items() if k != "K.T"}
        d["K"] = np.array(DOC000["K.T"]).T.tolist()
        return d
    return {"i_am_batman": DOC001, "the_cat_sat": DOC002, "random_seed_42": DOC004}[preset_id]


NUMERIC_PRESETS = ["she_likes_coffee", "i_am_batman", "the_cat_sat", "random_seed_42"]


@pytest.mark.parametrize("preset_id", NUMERIC_PRESETS)
def test_preset_reproduces_every_printed_matrix(preset_id):
    trace = attention.load_preset(preset_id).compute()
    for name, expected in doc_numbers(preset_id).items():
        close(getattr(trace, name), expected, f"{preset_id}.{name}")


@pytest.mark.parametrize("preset_id", NUMERIC_PRESETS)
def test_preset_file_expected_section_agrees_with_document(preset_id):
    preset = attention.load_preset(preset_id)
    doc = doc_numbers(preset_id)
    assert preset.expected, "the preset records the document's numbers"
    for name, value in preset.expected.items():
        assert name in doc, f"{preset_id}: the file records {name!r}, which the document does not print"
        close(value, doc[name], f"{preset_id} file expected.{name}")
    # Fixed input matrices in the file are the document's too.
    for name, value in preset.fixed.items():
        if name in doc:
            close(value, doc[name], f"{preset_id} file matrices.{name}")


@pytest.mark.parametrize("preset_id", NUMERIC_PRESETS)
def test_every_printed_matrix_is_recorded_in_the_file(preset_id):
    preset = attention.load_preset(preset_id)
    recorded = set(preset.expected) | set(preset.fixed)
    missing = set(doc_numbers(preset_id)) - recorded
    assert not missing, f"{preset_id}: the document prints {sorted(missing)} but the preset file does not record them"


def test_she_likes_coffee_k_transpose_as_printed():
    trace = attention.load_preset("she_likes_coffee").compute()
    close(trace.K.T, DOC000["K.T"], "K.T")
    assert trace.options.softmax == "none" and trace.options.projection == "x_w"


def test_i_am_batman_uses_transposed_projection():
    trace = attention.load_preset("i_am_batman").compute()
    assert trace.options.projection == "x_wt"
    close(np.array(DOC001["X"]) @ np.array(DOC001["W_q"]).T, DOC001["Q"], "X @ W_q.T")


def test_the_cat_sat_raw_scores_are_the_scaled_ones():
    trace = attention.load_preset("the_cat_sat").compute()
    close(trace.scores / 2.0, DOC002["scaled"], "scores / sqrt(4)")


@pytest.mark.parametrize("preset_id", list(TOKENS))
def test_tokens(preset_id):
    assert tuple(attention.load_preset(preset_id).tokens) == TOKENS[preset_id]


def test_random_seed_42_has_three_tokens():
    assert len(attention.load_preset("random_seed_42").tokens) == 3


# ---------------------------------------------------------------- 003: shapes and the np.dot surprise


def test_the_cat_sat_on_the_mat_shapes():
    preset = attention.load_preset("the_cat_sat_on_the_mat")
    t = preset.compute()
    assert t.X.shape == DOC003_SHAPES["X"]
    for name in ("W_q", "W_k", "W_v"):
        assert getattr(t, name).shape == DOC003_SHAPES["W"]
    for name in ("Q", "K", "V"):
        assert getattr(t, name).shape == DOC003_SHAPES["Q"]
    assert t.scores.shape == t.scaled.shape == t.weights.shape == (1, 6, 6)
    assert t.output.shape == (1, 6, 8)
    assert preset.expected_shapes["scores_np_dot"] == DOC003_SHAPES["scores_np_dot"]
    assert preset.expected_shapes["scores"] == (1, 6, 6)


def test_dot_shape_agrees_with_real_np_dot():
    Q = np.zeros(DOC003_SHAPES["Q"])
    Kt = np.transpose(np.zeros(DOC003_SHAPES["Q"]), (0, 2, 1))
    S = np.dot(Q, Kt)
    assert S.shape == DOC003_SHAPES["scores_np_dot"] == dot_shape(Q.shape, Kt.shape)
    O = np.dot(S, np.zeros(DOC003_SHAPES["Q"]))
    assert O.shape == (1, 6, 1, 1, 8) == dot_shape(S.shape, (1, 6, 8))
    assert O.shape != DOC003_SHAPES["output_printed"]  # the document's printed (1, 6, 1, 8) is not what numpy gives
    X, W = np.zeros(DOC003_SHAPES["X"]), np.zeros(DOC003_SHAPES["W"])
    assert np.dot(X, W).shape == dot_shape(X.shape, W.shape) == (1, 6, 8)
    assert (Q @ Kt).shape == matmul_shape(Q.shape, Kt.shape) == (1, 6, 6)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ((3, 4), (4, 5)),
        ((2, 3, 4), (4, 5)),
        ((2, 3, 4), (6, 4, 5)),
        ((1, 6, 1, 6), (1, 6, 8)),
        ((4,), (4,)),
        ((3, 4), (4,)),
        ((2, 3, 4), (4,)),
    ],
)
def test_dot_shape_matches_numpy_generally(a, b):
    assert dot_shape(a, b) == np.dot(np.zeros(a), np.zeros(b)).shape


def test_shape_trace_reports_numpys_true_result():
    steps = {s.step.split(" ")[0]: s for s in attention.shape_trace(DOC003_SHAPES["X"], 8)}
    X, W = np.ones(DOC003_SHAPES["X"]), np.ones(DOC003_SHAPES["W"])
    Q_dot = np.dot(X, W)
    S_dot = np.dot(Q_dot, np.transpose(Q_dot, (0, 2, 1)))
    O_dot = np.dot(S_dot, np.dot(X, W))
    Q_mm = X @ W
    S_mm = Q_mm @ np.swapaxes(Q_mm, -1, -2)
    assert steps["Q"].np_dot == Q_dot.shape and steps["Q"].matmul == Q_mm.shape
    assert steps["scores"].np_dot == S_dot.shape == (1, 6, 1, 6)
    assert steps["scores"].matmul == S_mm.shape == (1, 6, 6)
    assert steps["scores"].differs
    assert steps["weights"].np_dot == (1, 6, 1, 6)
    assert steps["output"].np_dot == O_dot.shape == (1, 6, 1, 1, 8)
    assert steps["output"].matmul == (S_mm @ Q_mm).shape == (1, 6, 8)


def test_the_attends_most_to_on_with_the_chosen_seed():
    preset = attention.load_preset("the_cat_sat_on_the_mat")
    t = preset.compute()
    row = t.weights[0, 0]
    assert preset.tokens[int(np.argmax(row))] == "on"
    assert abs(row.sum() - 1) < 1e-12


def test_the_cat_sat_on_the_mat_draws_in_document_order():
    preset = attention.load_preset("the_cat_sat_on_the_mat")
    seed = preset.seed
    state = np.random.get_state()
    try:
        np.random.seed(seed)
        X = np.random.rand(1, 6, 8)
        w_q, w_k, w_v = np.random.rand(8, 8), np.random.rand(8, 8), np.random.rand(8, 8)
    finally:
        np.random.set_state(state)
    t = preset.compute()
    for name, value in (("X", X), ("W_q", w_q), ("W_k", w_k), ("W_v", w_v)):
        assert np.array_equal(getattr(t, name), value), name
    # and @ batches like the document meant: per item Q K^T
    S = (X @ w_q)[0] @ (X @ w_k)[0].T
    assert np.allclose(t.scores[0], S, rtol=1e-13, atol=0)


# ---------------------------------------------------------------- seeds


def test_the_cat_sat_seed_1_redraws_weights_only():
    base = attention.load_preset("the_cat_sat").compute()
    other = attention.load_preset("the_cat_sat", seed=1).compute()
    close(other.X, DOC002["X"], "X with seed 1")
    assert np.array_equal(other.X, base.X)
    state = np.random.get_state()
    try:
        np.random.seed(1)
        expected = {"W_q": np.random.rand(4, 4), "W_k": np.random.rand(4, 4), "W_v": np.random.rand(4, 4)}
    finally:
        np.random.set_state(state)
    for name, value in expected.items():
        assert np.array_equal(getattr(other, name), value), name
        assert not np.allclose(getattr(other, name), DOC002[name]), f"{name} must change with the seed"


def test_the_cat_sat_explicit_seed_0_is_the_document():
    t = attention.load_preset("the_cat_sat", seed=0).compute()
    for name in ("W_q", "W_k", "W_v", "weights", "output"):
        close(getattr(t, name), DOC002[name], name)


def test_random_seed_42_equals_global_legacy_api():
    state = np.random.get_state()
    try:
        np.random.seed(42)
        X = np.random.rand(3, 4)
        W_Q = np.random.rand(4, 4)
        W_K = np.random.rand(4, 4)
        W_V = np.random.rand(4, 4)
    finally:
        np.random.set_state(state)
    t = attention.load_preset("random_seed_42", seed=42).compute()
    for name, value in (("X", X), ("W_q", W_Q), ("W_k", W_K), ("W_v", W_V)):
        assert np.array_equal(getattr(t, name), value), name
    close(t.X, DOC004["X"], "X")
    close(t.weights, DOC004["weights"], "weights")
    close(t.output, DOC004["output"], "output")


def test_random_seed_42_other_seed_redraws_everything():
    t = attention.load_preset("random_seed_42", seed=7).compute()
    rs = np.random.RandomState(7)
    for name, shape in (("X", (3, 4)), ("W_q", (4, 4)), ("W_k", (4, 4)), ("W_v", (4, 4))):
        assert np.array_equal(getattr(t, name), rs.rand(*shape)), name
    assert not np.allclose(t.X, DOC004["X"])


@pytest.mark.parametrize("preset_id", ["she_likes_coffee", "i_am_batman"])
@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_fixed_presets_ignore_seed(preset_id, seed):
    t = attention.load_preset(preset_id, seed=seed).compute()
    for name, expected in doc_numbers(preset_id).items():
        close(getattr(t, name), expected, f"{preset_id}.{name} with seed {seed}")


def test_matmul_shape_is_numpys_rule_and_raises_where_numpy_raises():
    import itertools

    from attention.errors import AttentionError

    for a, b in itertools.product(
        [(2, 3), (1, 2, 3), (4, 2, 3), (2, 1, 2, 3)], [(3, 5), (1, 3, 5), (4, 3, 5), (3, 3, 5)]
    ):
        try:
            want = (np.zeros(a) @ np.zeros(b)).shape
        except ValueError:
            with pytest.raises(AttentionError):
                matmul_shape(a, b)
        else:
            assert matmul_shape(a, b) == want, (a, b)
    with pytest.raises(AttentionError):
        matmul_shape((2, 3), (4, 5))


def test_combined_masks_are_the_and_of_their_parts_against_a_naive_loop():
    rs = np.random.RandomState(5)
    X, W = rs.randn(4, 3), [rs.randn(3, 3) for _ in range(3)]
    grid = tuple(tuple(bool(v) for v in row) for row in rs.rand(4, 4) > 0.3)
    pad = (False, False, True, False)
    for kind in attention.trace.MASK_KINDS:
        t = attention.self_attention(X, *W, mask=kind, padding=pad, custom_mask=grid)
        for i in range(4):
            for j in range(4):
                ok = (
                    ("causal" not in kind or j <= i)
                    and ("padding" not in kind or not pad[j])
                    and ("custom" not in kind or grid[i][j])
                    and ("window" not in kind or i - 3 < j <= i)  # the default window: 3 tokens
                )
                assert (t.allowed is None and ok) or (t.allowed is not None and t.allowed[i, j] == ok), (kind, i, j)
                if not ok:
                    assert t.weights[i, j] == 0.0
        assert np.isfinite(t.weights).all()


def test_a_custom_mask_of_the_wrong_size_is_named():
    rs = np.random.RandomState(1)
    with pytest.raises(attention.AttentionError, match="custom mask is 2 × 2 but there are 3 tokens"):
        attention.self_attention(rs.randn(3, 2), *[rs.randn(2, 2)] * 3, mask="custom", custom_mask=((True, True),) * 2)
