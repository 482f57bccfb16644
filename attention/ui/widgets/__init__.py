"""Small widgets every panel uses: messages, number callbacks, lazy tabs, number tables, windows, downloads."""
