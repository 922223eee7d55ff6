"""The papers' methods, one package per paper."""
