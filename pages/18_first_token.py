from attention.ui.app.frame import render

render("first_token")
