"""Options checked by one set of rules: from code (validate) and from JSON through the one reader (from_json, which
presets, challenges and from_dict use), with the field's path named, huge integers and NaN refused cleanly, and
to_dict/from_dict round trips; the mask string's parts."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attention import AttentionError, Options, masks
from attention.options import RULES

HUGE = 10**400  # float(HUGE) overflows; str(10**5000) is refused by Python itself


@pytest.mark.parametrize(
    ("key", "value", "pattern"),
    [
        ("temperature", 0, r"^options\.temperature must be a finite number > 0; got 0$"),
        ("temperature", HUGE, r"^options\.temperature is a number too large for a 64-bit float"),
        ("temperature", 10**5000, r"^options\.temperature is a number too large for a 64-bit float"),
        ("temperature", math.nan, r"^options\.temperature must be a finite number, got nan$"),
        ("temperature", True, r"^options\.temperature must be a finite number, got True$"),
        ("temperature", "2", r"^options\.temperature must be a finite number, got '2'$"),
        ("scale", -HUGE, r"^options\.scale is a number too large for a 64-bit float"),
        ("scale", -1, r"^options\.scale must be a finite number > 0 \(or None for 1/√d_k\); got -1$"),
        ("scale", [1.0], r"^options\.scale must be a finite number, got \[1\.0\]$"),
        ("heads", HUGE, r"^options\.heads must be a whole number from 1 to 256; got a whole number of about 400"),
        ("heads", 2.0, r"^options\.heads must be a whole number from 1 to 256; got 2\.0$"),
        ("heads", False, r"^options\.heads must be a whole number from 1 to 256; got False$"),
        ("projection", ["x_w"], r"^options\.projection must be 'x_w' \(X @ W\) or 'x_wt' \(X @ W\.T\); got \['x_w'\]$"),
        ("softmax", None, r"^options\.softmax must be 'row_max', 'global_max' or 'none'; got None$"),
        ("mask", "custom+causal", r"^options\.mask must be one of none, causal, padding, custom, window, causal\+"),
        (
            "padding",
            [True, 1],
            r"^options\.padding must be a list of true/false flags, one per token; got \[True, 1",
        ),
        (
            "padding",
            [HUGE * HUGE * HUGE * 10**4000],
            r"^options\.padding must be a list of.*cannot be printed",
        ),
        ("custom_mask", [[True], [False]], r"^options\.custom_mask must be a square grid of true/false"),
        ("custom_mask", [[True, "no"], [False, True]], r"^options\.custom_mask must be a list of rows of true/false"),
        ("positions", "absolute", r"^options\.positions must be one of none, sinusoidal, learned, rotary, alibi; got"),
    ],
    ids=lambda v: v if isinstance(v, str) and not v.startswith("^") else "",  # no huge integer in a test id
)
def test_from_dict_names_the_field_path_and_refuses_cleanly(key: str, value: object, pattern: str) -> None:
    with pytest.raises(AttentionError, match=pattern) as exc:
        Options.from_dict({key: value})
    assert exc.value.field == key
    with pytest.raises(AttentionError, match=pattern.replace(r"^options\.", r"^preset\.options\.")):
        Options.from_dict({key: value}, where="preset.options")


def test_validate_shares_the_rules_without_the_path() -> None:
    with pytest.raises(AttentionError, match=r"^temperature must be a finite number > 0; got a whole number of about"):
        Options(temperature=HUGE).validate()
    with pytest.raises(AttentionError, match=r"^heads must be a whole number from 1 to 256; got 257$"):
        Options(heads=257).validate()
    with pytest.raises(AttentionError, match=r"^padding must be true/false flags"):
        Options(padding=[True]).validate()  # a list is not hashable: the dataclass holds tuples
    assert set(RULES) == {f for f in Options.__dataclass_fields__}


def test_from_dict_refuses_unknown_keys_and_non_objects() -> None:
    with pytest.raises(AttentionError, match=r"^options\.temp is not an option; the options are projection, softmax"):
        Options.from_dict({"temp": 2})
    with pytest.raises(AttentionError, match=r"^options must be an object of option names and values; got list$"):
        Options.from_dict([])


def test_from_dict_converts_json_forms_and_checks_sizes_against_n() -> None:
    o = Options.from_dict(
        {"scale": 1, "temperature": 2, "mask": "causal+custom", "custom_mask": [[True, False], [True, True]]}, n=2
    )
    assert o.scale == 1.0 and isinstance(o.scale, float) and o.temperature == 2.0
    assert o.custom_mask == ((True, False), (True, True))
    with pytest.raises(AttentionError, match=r"^options\.padding must list 3 flags, one per token.*mask has 'padding'"):
        Options.from_dict({"mask": "padding"}, n=3)
    with pytest.raises(AttentionError, match=r"^options\.custom_mask must be 3 rows of 3 true/false flags"):
        Options.from_dict({"custom_mask": [[True, False], [True, True]]}, n=3)
    assert Options.from_dict({}) == Options()


grids = st.integers(1, 4).flatmap(
    lambda n: st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=n, max_size=n)
)


@settings(max_examples=60, deadline=None)
@given(
    projection=st.sampled_from(["x_w", "x_wt"]),
    softmax=st.sampled_from(["row_max", "global_max", "none"]),
    scale=st.one_of(st.none(), st.floats(1e-6, 1e6)),
    temperature=st.floats(1e-3, 1e3),
    mask=st.sampled_from(masks.KINDS),
    heads=st.integers(1, 256),
    grid=grids,
    pos=st.sampled_from(["none", "sinusoidal", "learned", "rotary"]),
)
def test_to_dict_is_json_and_from_dict_gives_it_back(projection, softmax, scale, temperature, mask, heads, grid, pos):
    n = len(grid)
    o = Options(
        projection, softmax, scale, temperature, mask, tuple([False] * n), heads, tuple(map(tuple, grid)), pos
    ).validate()
    d = json.loads(json.dumps(o.to_dict()))
    assert Options.from_dict(d, n=n) == o
    assert hash(Options.from_dict(d)) == hash(o)


def test_options_replace_is_dataclasses_replace() -> None:
    o = Options(temperature=2.0)
    assert o.replace(heads=2) == Options(temperature=2.0, heads=2)
    with pytest.raises(TypeError):
        o.replace(nonsense=1)


def test_mask_parts_split_and_join_in_canonical_order() -> None:
    assert masks.MASK_PARTS == ("causal", "padding", "custom", "window")
    assert masks.KINDS[:5] == ("none", "causal", "padding", "custom", "window")
    assert len(masks.KINDS) == 16
    for kind in masks.KINDS:
        assert masks.join(masks.parts(kind)) == kind
    assert masks.join(["custom", "causal"]) == "causal+custom"
    assert masks.join(()) == masks.join(["none"]) == "none"
    assert masks.join({"custom", "padding", "causal"}) == "causal+padding+custom"
    with pytest.raises(AttentionError, match="mask part 'diagonal' is not one of causal, padding, custom, window"):
        masks.join(["diagonal"])


def test_numpy_values_pass_the_rules() -> None:
    o = Options(scale=np.float32(0.5), heads=np.int64(2), padding=(np.bool_(True),)).validate()
    assert o.to_dict()["heads"] == 2 and o.to_dict()["padding"] == [True]
