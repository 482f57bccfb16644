from attention.ui.app.frame import render

render("routes")
