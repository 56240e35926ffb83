"""referee: a play-by-email referee for sealed-bid and auction games."""

__version__ = "0.1.0"
