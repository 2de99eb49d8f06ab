"""Paper reproductions."""
