"""The node: composition root, chunker, retrieval, HTTP API, command line and simulations."""

__version__ = "0.1.0"
