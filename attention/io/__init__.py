"""File formats: presets (schema, bit-exact load/save), CSV and zip, parsing of pastes and uploads, links, code export."""
