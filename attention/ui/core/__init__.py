"""The ground floor of the UI: the Session (the state as data), its trace, messages, labels and the escaping helper."""
