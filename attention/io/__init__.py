"""File formats: presets (bit-exact load/save), CSV and zip, pastes and uploads, links, code export, word vectors."""
