"""A model in the address: the head opened on the step pages (``mh``) and the model pages' model, text and ablations.

- ``mh=induction~2.1~4.17.9~1.2z``: a state at a model's head (``preset=model``): the model's id, layer.head
  (counted from 1), the text's token ids, then the ablations it runs with (layer.head and z for zero, m for mean);
- ``model=induction&ids=4.17.9&ablate=2.1z-1.2m``: what the "Inside a model" pages show (written only when it
  differs from their starting point);
- ``at=5&tok=17``: the position they predict from (counted from 1; written when it is not the text's default) and
  the token the Logit lens and Attribution pages follow (its id; written when it is not the prediction);
  ``thr=0.1``: the Routes page's threshold (written when it is not the default).
- ``clean=4.17.9&corrupt=4.3.9``: the Patching page's pair, as the model's token ids (written only when it is not
  the model's first ready-made pair).

Only the shipped model and the server's own checkpoints travel (:func:`attention.ui.core.models.travels`). Every
value is user text: bounded before it is split, read with plain string methods, and quoted in every notice.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import AttentionError
from ..core import models
from ..core.models import Ablation, HeadRef
from ..core.session import Inside, Session
from ..core.text import esc, quoted
from ..state import inside

HEAD = "mh"
MODEL, IDS, ABLATE, AT, TOKEN, THRESHOLD = "model", "ids", "ablate", "at", "tok", "thr"
PARAMS = (MODEL, IDS, ABLATE, AT, TOKEN, THRESHOLD)
CLEAN, CORRUPT = "clean", "corrupt"
PAIR = (CLEAN, CORRUPT)
MAX_IDS = 2048  # tokens in an address (the model pages' most), within LIMITS[IDS]'s characters
LIMITS = {HEAD: 9000, IDS: 8000, ABLATE: 2000, MODEL: 60, AT: 8, TOKEN: 8, THRESHOLD: 8, CLEAN: 8000, CORRUPT: 8000}
HOWS = {"z": "zero", "m": "mean"}


def ids_text(ids: tuple[int, ...]) -> str:
    """Token ids as the address holds them: "4.17.9"."""
    return ".".join(str(i) for i in ids)


def read_ids(text: str) -> tuple[int, ...] | None:
    """The token ids ``text`` spells (whole numbers below a million, 1 to :data:`MAX_IDS` of them), else None."""
    parts = text[: LIMITS[IDS]].split(".")
    if len(text) > LIMITS[IDS] or not 0 < len(parts) <= MAX_IDS:
        return None
    if not all(p.isascii() and p.isdigit() and len(p) <= 6 for p in parts):
        return None
    return tuple(int(p) for p in parts)


def ids_problem(text: str) -> str:
    """Why token ids in an address cannot be read (:func:`read_ids` refused them): too many, or not ids."""
    count = text[: LIMITS[IDS]].count(".") + 1
    if count > MAX_IDS:
        return f"the link names {count:,} token ids; the pages read at most {MAX_IDS:,}"
    return f"the link's token ids {quoted(text, 80)} are not whole numbers separated by dots"


def ablations_text(ablations: tuple[Ablation, ...]) -> str:
    """Ablations as the address holds them: "2.1z-1.2m" (layer.head counted from 1, z zero, m mean)."""
    return "-".join(f"{layer + 1}.{head + 1}{how[0]}" for layer, head, how in ablations)


def read_ablations(text: str) -> tuple[Ablation, ...] | None:
    """The ablations ``text`` spells, sorted and one per head, else None (layers and heads are checked by the
    model)."""
    if len(text) > LIMITS[ABLATE]:
        return None
    out: dict[tuple[int, int], str] = {}
    for part in filter(None, text.split("-")):
        how = HOWS.get(part[-1])
        where = part[:-1].split(".")
        if how is None or len(where) != 2 or not all(w.isascii() and w.isdigit() and 0 < len(w) <= 3 for w in where):
            return None
        layer, head = int(where[0]) - 1, int(where[1]) - 1
        if layer < 0 or head < 0:
            return None
        out[(layer, head)] = how
    return tuple(sorted((layer, head, how) for (layer, head), how in out.items()))


def head_param(ref: HeadRef) -> str:
    """The ``mh`` value of a head (its model must travel)."""
    return f"{ref.model_id}~{ref.layer + 1}.{ref.head + 1}~{ids_text(ref.ids)}~{ablations_text(ref.ablations)}"


def read_head(text: str) -> HeadRef | str:
    """The head an ``mh`` value names, or why it cannot be read (Markdown, the value quoted)."""
    parts = text[: LIMITS[HEAD]].split("~")
    if len(text) > LIMITS[HEAD] or len(parts) != 4:
        return f"the link's model head {quoted(text, 80)} is not {esc('model~layer.head~token ids~ablations')}"
    model_id, where, ids_part, ablate = parts
    if not models.travels(model_id) or model_id not in models.offered():
        return f"this server offers no model {quoted(model_id, 60)}"
    lh = where.split(".")
    ids, ablations = read_ids(ids_part), read_ablations(ablate)
    if len(lh) != 2 or not all(x.isascii() and x.isdigit() and 0 < len(x) <= 3 for x in lh):
        return f"the link's layer and head {quoted(where, 20)} are not two numbers such as 2.1"
    if ids is None:
        return ids_problem(ids_part)
    if ablations is None:
        return f"the link's ablations {quoted(ablate, 80)} are not such as 2.1z-1.2m"
    return HeadRef(model_id, ids, int(lh[0]) - 1, int(lh[1]) - 1, ablations)


def model_value(s: Session) -> str | None:
    """The ``model`` an address bar carries for ``s``'s model pages: their model, when it is not the one they start
    with (none before they are opened, none for a model that cannot travel)."""
    here = _travelling(s)
    return here.model if here is not None and here.model != inside.start()[0] else None


def fits(ids: tuple[int, ...]) -> bool:
    """Whether a text's token ids fit in an address (:data:`LIMITS`: at most 8,000 characters, 1,000 to 2,000 tokens
    of a BPE tokenizer's ids). A longer text is left out of it, with the position and token read on it: a reload or
    a link opens the model's first text, and the pages say so (:func:`attention.ui.modelpages.choose.address_note`)."""
    return 0 < len(ids) <= MAX_IDS and sum(len(str(i)) + 1 for i in ids) - 1 <= LIMITS[IDS]


def ids_value(s: Session) -> tuple[int, ...] | None:
    """The ``ids``: the model pages' text, when it is not the one they start with and fits in an address."""
    here = _travelling(s)
    return here.ids if here is not None and here.ids != inside.start()[1] and fits(here.ids) else None


def ablate_value(s: Session) -> tuple[Ablation, ...] | None:
    """The ``ablate``: the model pages' ablations, when there are any."""
    here = _travelling(s)
    return here.ablations if here is not None and here.ablations else None


def at_value(s: Session) -> int | None:
    """The ``at``: the position the model pages predict from, counted from 1, when it is not the text's default."""
    here = _on_text(s)
    moved = here is not None and here.position != inside.default_position(here.model, here.ids)
    return here.position + 1 if moved else None


def token_value(s: Session) -> int | None:
    """The ``tok``: the token the Logit lens and Attribution pages follow, when one was chosen."""
    here = _on_text(s)
    return here.token if here is not None else None


def threshold_value(s: Session) -> float | None:
    """The ``thr``: the Routes page's threshold, when it is not the default."""
    here = _travelling(s)
    return here.threshold if here is not None and here.threshold != Inside.threshold else None


def threshold_text(value: float) -> str:
    """A threshold as the address holds it: "0.1", "0.035"."""
    return f"{value:.4g}"


def _share(text: str | None) -> float | None:
    """A decimal share such as 0.04 that ``text`` spells (digits and one point, at most 8 characters), else None."""
    if text is None or not 0 < len(text) <= LIMITS[THRESHOLD] or not text.isascii():
        return None
    whole, _, fraction = text.partition(".")
    return float(text) if (whole + fraction).isdigit() and whole.isdigit() else None


def _whole(text: str | None) -> int | None:
    """A whole number of 1 to 7 digits ``text`` spells, else None (None stays None)."""
    return int(text) if text is not None and text.isascii() and text.isdigit() and len(text) <= 7 else None


def _travelling(s: Session) -> Inside | None:
    return s.inside if s.inside is not None and models.travels(s.inside.model) else None


def _on_text(s: Session) -> Inside | None:
    """The model pages' state when its text travels too: a position or a token read on a text the address leaves
    out would land on another text."""
    here = _travelling(s)
    return here if here is not None and fits(here.ids) else None


def restore(qp: Mapping[str, str], s: Session) -> list[str]:
    """Put the model pages' model, text and ablations from the address into their state (in ``s``); notices for
    what could not be (each value quoted). Nothing is restored from a value that cannot be read."""
    if not any(k in qp for k in PARAMS):
        return []
    for key in PARAMS:
        if key in qp and len(qp[key]) > LIMITS[key]:
            return [f"The link's {key} is {len(qp[key]):,} characters long, more than {LIMITS[key]:,}; ignored."]
    model_id = qp.get(MODEL, models.BUILTIN)
    if not models.travels(model_id) or model_id not in models.offered():
        return [f"This server offers no model {quoted(model_id, 60)}; the model pages show the shipped one."]
    ids = read_ids(qp[IDS]) if IDS in qp else None
    ablations = read_ablations(qp.get(ABLATE, ""))
    if IDS in qp and ids is None:
        problem = ids_problem(qp[IDS])
        return [f"{problem[0].upper()}{problem[1:]}; ignored."]
    if ablations is None:
        return [f"The link's ablations {quoted(qp[ABLATE], 80)} are not such as 2.1z-1.2m; ignored."]
    problem = inside.restore(s, model_id, ids, ablations)
    if problem:
        return [f"The link's model pages could not be restored: {problem}"]
    return _readout(qp, s)


def _readout(qp: Mapping[str, str], s: Session) -> list[str]:
    """The position (``at``), the token (``tok``) and the threshold (``thr``) from the address, once the model and
    text are in; a notice
    for a value that cannot be read or does not fit (that value is left as it was)."""
    notices = []
    at, tok, thr = _whole(qp.get(AT)), _whole(qp.get(TOKEN)), _share(qp.get(THRESHOLD))
    if THRESHOLD in qp and thr is None:
        notices.append(f"The link's threshold {quoted(qp[THRESHOLD], 20)} is not a decimal such as 0.04; ignored.")
    if AT in qp and at is None:
        notices.append(f"The link's position {quoted(qp[AT], 20)} is not a whole number; ignored.")
    if TOKEN in qp and tok is None:
        notices.append(f"The link's token {quoted(qp[TOKEN], 20)} is not a token id (a whole number); ignored.")
    problem = inside.restore_readout(s, None if at is None else at - 1, tok, thr)
    return notices + ([f"The link's position, token or threshold could not be restored: {problem}."] if problem else [])


def _pair(s: Session) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The Patching page's pair, when it is for the model pages' model, that model travels, and it is not the
    model's first ready-made pair (where the page starts)."""
    here, p = _travelling(s), s.patching
    if here is None or p is None or p.model != here.model or not (fits(p.clean) and fits(p.corrupt)):
        return None
    try:
        first = next(iter(models.pairs(p.model).values()), None)
    except AttentionError:
        return None
    return None if (p.clean, p.corrupt) == first else (p.clean, p.corrupt)


def clean_value(s: Session) -> tuple[int, ...] | None:
    """The ``clean``: the Patching page's clean text, when its pair travels (see :func:`_pair`)."""
    pair = _pair(s)
    return None if pair is None else pair[0]


def corrupt_value(s: Session) -> tuple[int, ...] | None:
    """The ``corrupt``: the Patching page's corrupted text, with ``clean``."""
    pair = _pair(s)
    return None if pair is None else pair[1]


def restore_pair(qp: Mapping[str, str], s: Session) -> list[str]:
    """Put the Patching page's pair from the address into its state (in ``s``, after the model pages' model); a
    notice for a pair that cannot be read or does not fit the model (each value quoted), and nothing changes."""
    if not any(k in qp for k in PAIR):
        return []
    texts = {k: qp.get(k, "") for k in PAIR}
    for key, text in texts.items():
        if len(text) > LIMITS[key]:
            return [f"The link's {key} is {len(text):,} characters long, more than {LIMITS[key]:,}; ignored."]
    clean, corrupt = read_ids(texts[CLEAN]), read_ids(texts[CORRUPT])
    if clean is None or corrupt is None:
        bad = texts[CLEAN] if clean is None else texts[CORRUPT]
        return [f"The link's patching pair {quoted(bad, 80)} is not token ids separated by dots; ignored."]
    problem = inside.restore_pair(s, clean, corrupt)
    return [f"The link's patching pair could not be restored: {problem}"] if problem else []
