"""Back leaves a page in one press, however many changes were made on it (each wrote the address); and Back brings
the page before back as it was left."""

from __future__ import annotations

from tests.helpers.browser import nav, open_page, ready, rerun


def test_back_leaves_a_page_in_one_press(page, base_url) -> None:
    """Open Tokens, change the preset four times (each change writes the address), then press Back once: the page
    before (the Overview, as it was left) is shown. It took five presses: one entry in the history per change."""
    open_page(page, base_url, "", "preset=the_cat_sat")
    nav(page, "Tokens")
    tokens_url = page.url
    sidebar = page.get_by_test_id("stSidebar")
    for preset in ("She likes coffee", "The cat sat on the mat", "The cat sat", "I am Batman"):
        sidebar.get_by_role("combobox").first.click()
        option = page.get_by_role("option", name=preset, exact=True).first
        option.wait_for()
        with rerun(page):
            option.click()
    assert "/tokens" in page.url and page.url != tokens_url, page.url  # the address followed every change
    length = page.evaluate("() => history.length")
    with rerun(page):
        page.go_back()
    ready(page)
    assert "/tokens" not in page.url, (page.url, length)
    assert page.get_by_test_id("stMain").locator("h1").first.inner_text().startswith("Self-attention"), page.url
