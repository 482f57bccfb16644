from attention.ui.frame import render

render("learn")
