from attention.ui.frame import render

render("why_sqrt_dk")
