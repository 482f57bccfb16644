"""Review of issue 23 in real Chromium: an ablation on Every head reruns only its fragment, and the address must
follow it (a reload or a link restores the ablation)."""

from __future__ import annotations

from tests.helpers.browser import error_texts, guarded_context, head_button, ready, rerun, settle


def test_an_ablation_on_every_head_reaches_the_address_and_survives_a_reload(browser, base_url) -> None:  # noqa: F811
    with guarded_context(browser, viewport={"width": 1400, "height": 1000}) as context:
        pg = context.new_page()
        pg.goto(f"{base_url}/every_head")
        settle(pg)
        ready(pg)
        ablate = head_button(pg, "Ablate layer 2 · head 1")  # the chosen head's buttons: layer 2 · head 1 chosen
        with rerun(pg):
            ablate.click()
        ready(pg)
        assert not error_texts(pg), error_texts(pg)
        pg.wait_for_function("location.search.includes('ablate=2.1z')", timeout=30_000)
        pg.reload()
        settle(pg)
        ready(pg)
        restore = head_button(pg, "Restore layer 2 · head 1 (zero-ablated)")
        assert restore.count() == 1, "the reload lost the ablation"
