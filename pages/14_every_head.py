from attention.ui.app.frame import render

render("every_head")
