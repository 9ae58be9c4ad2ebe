"""Modal screens of the console."""
