"""``pinlint verify``: run each fixture and its fix on a real GPU and report what the difference costs."""
