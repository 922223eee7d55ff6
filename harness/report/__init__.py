"""The report: what a results folder's pages are made of. Every module here reads a results folder's table and
never the registry or a worker."""
