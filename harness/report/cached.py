"""What a run with nothing new to do writes or prints of the pages, kept in the cache (:mod:`harness.cache`) so
that such a run imports neither the pages' code nor the claim kinds: the results root's index.md, and the legend
lines of a folder's verdicts. Imports only leaves at module level."""
from __future__ import annotations

from pathlib import Path

INDEX = "index"  # the cache's kind of entry: an index.md known to be what its folder's claims make


def write_index_when_changed(root: Path) -> None:
    """:func:`harness.report.folder.write_index`, unless ``root/index.md`` is already what it would write.

    Importing the pages' code for it was a tenth of a run with nothing to do. The index is made of the claims.json
    files it globs and the engine's code: a digest of those and of index.md's own bytes is kept in the cache
    (:mod:`harness.cache`) once index.md is written; while it is the same, index.md stands.
    """
    from harness.cache import get, put

    key = index_key(root)
    if key is not None and get(INDEX, key) is True:
        return
    from harness.report.folder import write_index

    write_index(root)
    key = index_key(root)
    if key is not None:
        put(INDEX, key, True)


def index_key(root: Path) -> str | None:
    """A digest of what ``root/index.md`` is made of (write_index's globs' claims.json files, the engine) and of its
    bytes; None when one cannot be read."""
    from harness.cache import digest, engine_digest

    parts: list[bytes | str] = [engine_digest()]
    try:
        for pattern in ("*/claims.json", "*/*/claims.json"):
            for path in sorted(root.glob(pattern)):
                parts += [path.relative_to(root).as_posix(), path.read_bytes()]
        parts.append((root / "index.md").read_bytes())
    except OSError:
        return None
    return digest(*parts)


LEGENDS = "legends"  # the cache's kind of entry: the legend lines of a folder's verdicts


def cached_legends(folder: Path, verdicts: list) -> list[str]:
    """:func:`harness.claims.legends` of ``verdicts``, the folder's (claims.json's), kept in the cache
    (:mod:`harness.cache`) under claims.json's bytes, the engine's source and the installed packages (an outside
    package's claim kinds and their code): importing the claim kinds only to print these lines was a tenth of a run
    with nothing to do."""
    from harness.cache import digest, engine_digest, environment_digest, get, put
    from harness.code import entry_point_code
    from harness.spec.load import CLAIM_KINDS

    try:
        key = digest(engine_digest(), environment_digest(), *entry_point_code(CLAIM_KINDS), "\0",
                     (folder / "claims.json").read_bytes())
    except OSError:
        key = None
    lines = get(LEGENDS, key) if key is not None else None
    if isinstance(lines, list) and all(isinstance(line, str) for line in lines):
        return lines
    from harness.claims import legends

    lines = legends(verdicts)
    if key is not None:
        put(LEGENDS, key, lines)
    return lines
