"""One module per output format; ``pinlint.report`` picks one by name and imports only that one."""
