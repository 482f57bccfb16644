"""Export as code: the generated script and notebook rebuild exactly the engine's numbers."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from dataclasses import replace

import nbformat
import numpy as np
import pytest

import attention
from attention.io.codegen import notebook, python_script

NAMES = ("X", "W_q", "W_k", "W_v", "Q", "K", "V", "scores", "scaled", "weights", "output")


def edited_w_q() -> attention.Preset:
    base = attention.load_preset("the_cat_sat")
    m = base.matrices()
    m["W_q"] = m["W_q"].copy()
    m["W_q"][1, 2] = -1.2345678901234567
    return attention.from_state(base.tokens, m, base.options, id="edited", title="The cat sat, W_q edited")


def blank_heads_fixed() -> attention.Preset:
    base = attention.blank(4, 4, seed=0)
    return attention.from_state(
        base.tokens, base.matrices(), base.options.replace(mask="causal", temperature=2.0, heads=2)
    )


def blank_heads_random() -> attention.Preset:
    base = attention.blank(4, 4, seed=0)
    return replace(base, options=base.options.replace(mask="causal", temperature=2.0, heads=2))


def transposed_padding() -> attention.Preset:
    base = attention.load_preset("i_am_batman")
    opts = base.options.replace(mask="padding", padding=(False, True, False), softmax="global_max", scale=0.25)
    return attention.from_state(base.tokens, base.matrices(), opts, title='Batman """; import os  # \n evil')


def batched_heads() -> attention.Preset:
    base = attention.load_preset("the_cat_sat_on_the_mat", seed=7)
    return replace(base, options=base.options.replace(heads=4, mask="causal"))


def hostile_tokens() -> attention.Preset:
    base = attention.blank(3, 4, seed=2)
    toks = ['"; import os; os.system("x"); "', "\\n", "'''"]
    return attention.from_state(toks, base.matrices(), base.options.replace(softmax="none"), title="x\r\nimport os")


def transposed_heads_all_padding() -> attention.Preset:
    base = attention.blank(3, 4, 6, seed=11)
    m = {name: (arr.T if name != "X" else arr) for name, arr in base.matrices().items()}
    opts = attention.Options(projection="x_wt", heads=3, mask="padding", padding=(True, True, True), softmax="none")
    return attention.from_state(base.tokens, m, opts)


def family(heads: int, kv: int, projection: str = "x_w", batched: bool = False, **options) -> attention.Preset:
    """Grouped-query heads (W_k and W_v cut to kv blocks), with a window, ALiBi or rotary positions."""
    base = attention.blank(6, 4, 8, seed=3)
    m = base.matrices()
    keep = 8 // heads * kv
    m["W_k"], m["W_v"] = m["W_k"][:, :keep], m["W_v"][:, : 2 * kv]
    if projection == "x_wt":
        m = {name: (arr.T if name != "X" else arr) for name, arr in m.items()}
    if batched:
        m["X"] = m["X"][None]
    opts = attention.Options(projection=projection, heads=heads, kv_heads=kv, **options)
    return attention.from_state(base.tokens, m, opts)


CASES = {pid: (lambda pid=pid: attention.load_preset(pid)) for pid in attention.list_presets()}
CASES.update(
    {
        "the_cat_sat_seed_5": lambda: attention.load_preset("the_cat_sat", seed=5),
        "edited_w_q": edited_w_q,
        "blank_causal_T2_heads2_fixed": blank_heads_fixed,
        "blank_causal_T2_heads2_random": blank_heads_random,
        "batman_padding_global_max_scale": transposed_padding,
        "batched_heads4_causal": batched_heads,
        "hostile_tokens": hostile_tokens,
        "transposed_heads3_all_padding": transposed_heads_all_padding,
        "gqa_4_2_alibi_window": lambda: family(4, 2, mask="causal+window", window=2, positions="alibi"),
        "mqa_4_1_transposed_rotary": lambda: family(4, 1, "x_wt", positions="rotary", temperature=0.5),
        "alibi_one_head_window_padding": lambda: family(
            1, 1, mask="padding+window", window=3, padding=(False, True) * 3, positions="alibi"
        ),
        "gqa_2_1_batched_sinusoidal": lambda: family(2, 1, batched=True, positions="sinusoidal", mask="window"),
        "gqa_2_1_rotary_halves_partial_llama3": lambda: family(
            2,
            1,
            positions="rotary",
            rope_theta=500.0,
            rotary_layout="halves",
            rotary_dims=2,
            rope_scaling="llama3",
            rope_factor=4.0,
            rope_original_context=16,
            mask="causal",
        ),
        "gqa_4_2_qk_norm_rotary_halves": lambda: family(
            4, 2, positions="rotary", rotary_layout="halves", mask="causal", q_norm=(1.5, 0.25), k_norm=(0.5, 2.0),
            qk_norm_eps=1e-5,
        ),
        "qk_norm_one_head_q_only_transposed": lambda: family(1, 1, "x_wt", q_norm=(1.25, 0.5, 2.0, 0.75) * 2),
        "rotary_one_head_base_linear_transposed": lambda: family(
            1, 1, "x_wt", positions="rotary", rope_theta=1e5, rope_scaling="linear", rope_factor=2.5
        ),
    }
)


def assert_matches(got: dict, trace: attention.Trace) -> None:
    for name in NAMES:
        want = np.asarray(getattr(trace, name))
        arr = np.asarray(got[name], dtype=np.float64)
        assert arr.shape == want.shape, name
        np.testing.assert_array_equal(arr, want, err_msg=name)  # exact (-inf == -inf)


@pytest.mark.parametrize("case", list(CASES))
def test_script_prints_the_engines_numbers(case, tmp_path):
    preset = CASES[case]()
    script = python_script(preset)
    path = tmp_path / "attention_script.py"
    path.write_text(script, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-I", str(path), "--json"], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[-1].startswith("RESULTS_JSON ")
    got = json.loads(lines[-1][len("RESULTS_JSON ") :])
    trace = preset.compute()
    assert_matches(got, trace)
    assert_matches(
        got,
        attention.self_attention(
            *(preset.matrices()[n] for n in ("X", "W_q", "W_k", "W_v")), tokens=preset.tokens, options=preset.options
        ),
    )
    out = run.stdout
    for label in (
        "Input tokens:",
        "Q:\n",
        "K:\n",
        "V:\n",
        "Scaled scores:\n",
        "Attention weights:\n",
        "Self-attention output:\n",
    ):
        assert label in out
    assert repr(list(preset.tokens)) in out
    assert "attends most to" in out or "attends to nothing" in out


def test_script_without_flag_has_no_json_line(tmp_path):
    path = tmp_path / "s.py"
    path.write_text(python_script(attention.load_preset("i_am_batman")), encoding="utf-8")
    run = subprocess.run([sys.executable, "-I", str(path)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "RESULTS_JSON" not in run.stdout
    # Document 001's printout, 8 decimals, as numpy prints by default.
    assert "[[0.65693877 0.01914529 0.32391594]" in run.stdout
    assert "[[0.81889674 0.65238532]" in run.stdout


def test_script_reproduces_the_documents_printed_weights(tmp_path):
    for pid, printed in [
        ("the_cat_sat", "[[0.01495411 0.63870437 0.34634152]"),
        ("random_seed_42", "[[0.52735889 0.11510842 0.35753269]"),
        ("she_likes_coffee", "[[0.33567137 0.30004505 0.36428358]"),
    ]:
        path = tmp_path / f"{pid}.py"
        path.write_text(python_script(attention.load_preset(pid)), encoding="utf-8")
        run = subprocess.run(
            [sys.executable, "-I", str(path)], capture_output=True, text=True, cwd=tmp_path, timeout=120
        )
        assert printed in run.stdout, pid


@pytest.mark.parametrize(
    "pid, needles",
    [
        ("she_likes_coffee", ["X = np.array([", "[0.2, 0.9, 0.1, 0.5]", "e = np.exp(x)", "Q = X @ W_q "]),
        ("i_am_batman", ["Q = X @ W_q.T", "W_q = np.array(["]),
        ("the_cat_sat", ["np.random.seed(0)", "W_q = np.random.rand(4, 4)", "np.max(x, axis=-1, keepdims=True)"]),
        (
            "the_cat_sat_on_the_mat",
            ["np.random.seed(89299)", "X = np.random.rand(1, 6, 8)", "np.swapaxes(K, -1, -2)", "np.dot"],
        ),
        ("random_seed_42", ["np.random.seed(42)", "X = np.random.rand(3, 4)"]),
    ],
)
def test_script_follows_the_documents_conventions(pid, needles):
    script = python_script(attention.load_preset(pid))
    for needle in needles:
        assert needle in script, needle
    imports = [line for line in script.splitlines() if line.startswith(("import ", "from "))]
    assert imports == ["import json", "import sys", "import numpy as np"]


def test_random_draw_order_is_kept():
    script = python_script(attention.load_preset("random_seed_42"))
    order = [script.index(f"{n} = np.random.rand") for n in ("X", "W_q", "W_k", "W_v")]
    assert order == sorted(order)
    assert sum(line.startswith("np.random.seed(") for line in script.splitlines()) == 1


@pytest.mark.parametrize(
    ("make", "fn", "what"),
    [
        (lambda: attention.load_preset("the_cat_sat"), "rand", "uniform on [0, 1)"),
        (lambda: attention.blank(4, 4, seed=0), "randn", "standard normal"),
    ],
)
def test_the_text_names_the_generator_the_code_draws_with(make, fn, what):
    """The comment and the markdown say what the code does: rand for the documents' presets, randn (and the
    factor 1/√d_model on each W) for a blank one."""
    preset = make()
    script, nb = python_script(preset), notebook(preset)
    assert f"= np.random.{fn}(" in script
    text = " ".join(line.lstrip("# ") for line in script.splitlines() if line.startswith("#"))
    assert f"followed by np.random.{fn} ({what})" in text
    assert f"followed by `np.random.{fn}` ({what})" in nb
    other = "randn" if fn == "rand" else "rand"
    assert f"np.random.{other}(" not in script and f"np.random.{other} " not in text
    if fn == "randn":
        assert "multiplies W_q by 0.5, W_k by 0.5 and W_v by 0.5" in text


def test_alibi_has_no_rotary_step():
    """ALiBi is a bias on the scaled scores (step 5): the code has no rotary function and no positions step."""
    script = python_script(CASES["gqa_4_2_alibi_window"]())
    assert "def rotary" not in script and "Step 2b" not in script and "slopes = np.array(" in script


def test_full_precision_literals():
    script = python_script(edited_w_q())
    assert "-1.2345678901234567" in script
    assert "np.random" not in script  # from_state fixes every matrix


def test_user_text_cannot_break_out_of_comments():
    script = python_script(transposed_padding())
    compile(script, "generated.py", "exec")
    header = [line for line in script.splitlines() if "evil" in line]
    assert header and all(line.startswith("#") for line in header)
    script = python_script(hostile_tokens())
    assert not any(line.startswith("import os") for line in script.splitlines())


@pytest.mark.parametrize("case", list(CASES))
def test_notebook_is_valid_and_its_cells_rebuild_the_state(case):
    preset = CASES[case]()
    text = notebook(preset)
    nb = nbformat.reads(text, as_version=4)
    nbformat.validate(nb)
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    assert code_cells and all(c.outputs == [] and c.execution_count is None for c in code_cells)
    assert sum(c.cell_type == "markdown" for c in nb.cells) >= 8
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        for cell in code_cells:
            exec(compile(cell.source, f"<cell {cell.id}>", "exec"), namespace)  # noqa: S102 - our own generated code
    assert_matches(namespace, preset.compute())
    assert "Attention weights:" in out.getvalue()


# HTML and every kind of Markdown a title or a description could carry
HOSTILE_MD = (
    "<script>alert(1)</script> <b>bold</b> **strong** _em_ `code` [link](http://127.0.0.2/) "
    "![img](http://127.0.0.2/p.png) # hash | a | b | ~~strike~~ {x} \\ 1. + - * &amp; &lt;tag&gt; <!-- c -->"
)


def test_notebook_markdown_shows_user_text_literally():
    """Rendered by an independent CommonMark renderer (markdown-it), the notebook's intro shows the title and the
    description exactly as typed: a heading and a paragraph of plain text, no tag, link, image, code or emphasis
    made from them."""
    from markdown_it import MarkdownIt

    base = attention.blank(2, 2)
    preset = replace(
        attention.from_state(base.tokens, base.matrices(), base.options, title=HOSTILE_MD), description=HOSTILE_MD
    )
    cell = nbformat.reads(notebook(preset), as_version=4).cells[0]
    assert cell.cell_type == "markdown"
    tokens = MarkdownIt("commonmark").parse(cell.source)
    assert [t.tag for t in tokens if t.type.endswith("_open")][:3] == ["h1", "p", "p"]  # title, intro, description
    inlines = [t for t in tokens if t.type == "inline"]
    for where, inline in (("title", inlines[0]), ("description", inlines[2])):
        kinds = {child.type for child in inline.children}
        assert kinds == {"text"}, (where, kinds)  # no html_inline, link_open, image, em_open, code_inline ...
        assert "".join(child.content for child in inline.children) == HOSTILE_MD, where


def test_notebook_is_deterministic_and_escapes_markdown():
    a = notebook(transposed_padding())
    assert a == notebook(transposed_padding())
    html_nb = notebook(
        attention.from_state(
            ["a", "b"], attention.blank(2, 2).matrices(), attention.Options(), title="<script>alert(1)</script>"
        )
    )
    assert "<script>" not in html_nb
