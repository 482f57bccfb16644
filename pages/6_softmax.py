from attention.ui.page import render

render("softmax")
