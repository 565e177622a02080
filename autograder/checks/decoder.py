"""Checks of the decoder assignment."""
