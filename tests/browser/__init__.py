"""The app in real headless Chromium (Playwright), as a person uses it."""
