from attention.ui.app.frame import render

render("watch_it_learn")
