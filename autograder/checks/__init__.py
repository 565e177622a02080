"""The check registry and the checks of every assignment."""
