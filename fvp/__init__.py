"""Arm Corstone FVP discovery and launch. No Textual here."""
