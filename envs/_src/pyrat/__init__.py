"""PyRat internals: maze generation and files (`maze`), text and matplotlib rendering (`render`)."""
