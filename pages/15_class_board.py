from attention.ui.app.frame import render

render("class_board")
