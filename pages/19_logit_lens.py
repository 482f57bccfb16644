from attention.ui.app.frame import render

render("logit_lens")
