"""Checks of the encoder assignment."""
