"""Serving a class: the server settings, replicas behind nginx, the class board's store on PostgreSQL."""
