from attention.ui.page import render

render("tokens")
