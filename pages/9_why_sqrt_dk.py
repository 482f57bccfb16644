from attention.ui.app.frame import render

render("why_sqrt_dk")
