from attention.ui.frame import render

render("flash")
