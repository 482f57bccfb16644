"""Every change to the session, as named functions called from widget callbacks: the one writer of the state.

The ``Session`` (:mod:`attention.ui.core.session`) changes only through the functions below (``load_preset``,
``edit_cells``, ``resize``, ``set_option`` ...), and those are called only from widget callbacks
(``on_change`` / ``on_click``), which Streamlit runs before the script: so every page, the sidebar included,
draws from the state as it is after the change, and no run changes state half-way or needs ``st.rerun()``.
A change that is refused leaves the session exactly as it was and leaves a message (:func:`say`) that the
page shows next to the control that caused it. The session's ``origin`` (the unedited preset) is set here too, with
the preset, seed or size; :mod:`.reshapes` holds the reshapes (shuffle, resize, W_o, P, key/value heads) that these
changes, and the address's rebuild of a session, apply.

Callers import the module that holds a change (``from ..state import presets`` ... ``presets.load_preset``), so a
reader can follow a call: :mod:`.core` (``ensure``, ``say``), :mod:`.presets`, :mod:`.edits`, :mod:`.options`,
:mod:`.pins`, :mod:`.family`, :mod:`.learning`, :mod:`.challenges`; the model pages' :mod:`.inside` and
:mod:`.generation`; the class board's :mod:`.board`.

What is kept outside the Session, between runs and across sessions, is of two kinds, in one mechanism
(:mod:`attention.ui.core.cache`). A value made again from its key (a trace, a model's run, a generation walk, an
estimate, a vocabulary, a session rebuilt from a link, a chart spec) is kept in a
:class:`~attention.ui.core.cache.TraceCache`, bounded by bytes, entries and age, and is read only: a function whose
results are kept is decorated :func:`~attention.ui.core.cache.kept`. What cannot be made again (a running job, a model
uploaded or trained) is held in a :class:`~attention.ui.core.cache.Registry` (:mod:`attention.ui.core.jobs`,
:mod:`attention.ui.core.models`). No functools or Streamlit cache and no module-level container filled as the process
runs: tests/engine/test_one_cache.py holds every module of the UI to this, with no exception (docs/architecture.md,
"The state, and what is kept between runs").
"""
