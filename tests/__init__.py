"""The tests, in tiers: engine, oracles, app, browser, deploy (see docs/testing.md); shared code in helpers."""
