from attention.ui.app.frame import render

render("kv_cache")
