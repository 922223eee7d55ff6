"""YAML read safely with the line and column of every value and key (for messages), duplicate keys refused, merge
keys and anchors bounded in size and depth."""
from __future__ import annotations

from typing import Any

from harness.spec.errors import Path_, Problem, SpecError, describe


class Positions:
    """Line/column (1-based) of every value and every mapping key, by JSON path."""

    def __init__(self):
        self.values: dict[Path_, tuple[int, int]] = {}
        self.keys: dict[Path_, tuple[int, int]] = {}

    def of(self, path: Path_, key: bool = False) -> tuple[int, int]:
        table = self.keys if key else self.values
        path = tuple(path)
        while path not in table and path:
            path = path[:-1]  # the nearest enclosing node that exists in the file
        return table.get(path) or self.values.get(path, (1, 1))


_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_STANDARD_TAGS = {
    "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:str", "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null",
}


# A spec is a few kilobytes of plain data. These bounds refuse, in well under a second, what
# would otherwise take the machine down: a large file, or a few hundred bytes of nested YAML
# aliases ("billion laughs") that expand to billions of values.
MAX_BYTES = 1_000_000
MAX_NODES = 100_000  # values after alias expansion
MAX_DEPTH = 50


def _check_expanded_size(root, file: str) -> None:
    """Refuse a node graph whose alias expansion is too large or too deep, without expanding it.

    Aliases make the composed graph share nodes; the size of the expanded tree is computed
    once per node (memoised), so the check is linear in the file, not in its expansion.
    """
    import yaml  # here, not at the top: a spec checked before is not parsed (harness.spec.load)

    sizes: dict[int, tuple[int, int]] = {}
    visiting: set[int] = set()

    def children(node):
        if isinstance(node, yaml.MappingNode):
            return [n for pair in node.value for n in pair]
        if isinstance(node, yaml.SequenceNode):
            return list(node.value)
        return []

    def measure(node) -> tuple[int, int]:  # (nodes after expansion, depth)
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in visiting:
            raise SpecError([Problem(file, node.start_mark.line + 1, node.start_mark.column + 1, (),
                                     "a YAML alias refers to the node that contains it: a spec is plain data")])
        visiting.add(key)
        count, depth = 1, 1
        for child in children(node):
            child_count, child_depth = measure(child)
            count, depth = min(count + child_count, MAX_NODES + 1), max(depth, child_depth + 1)
        visiting.discard(key)
        sizes[key] = (count, depth)
        return count, depth

    count, depth = measure(root)
    _check_bounds(file, written=len(sizes), expanded=count, depth=depth)


def _check_bounds(file: str, written: int, expanded: int, depth: int) -> None:
    """Refuse a spec of more than :data:`MAX_NODES` values as written or after alias expansion, or nested deeper
    than :data:`MAX_DEPTH`."""
    if written > MAX_NODES:  # as written, before any alias repeats a value
        raise SpecError([Problem(file, 1, 1, (), f"has {written:,} values; a spec has at most {MAX_NODES:,}")])
    if expanded > MAX_NODES:
        raise SpecError([Problem(file, 1, 1, (), f"expands to more than {MAX_NODES:,} values (YAML aliases repeat "
                                                 "what they point to); a spec is small plain data")])
    if depth > MAX_DEPTH:
        raise SpecError([Problem(file, 1, 1, (), f"nested {depth} levels deep; a spec has at most {MAX_DEPTH}")])


def _check_tree_size(root, file: str) -> None:
    """:func:`_check_expanded_size` for a node graph without aliases (every node written once): the same bounds
    and messages from a plain walk, a fifth of the cost of the memoised one on a 10,000-dataset spec."""
    import yaml  # here, not at the top: a spec checked before is not parsed (harness.spec.load)

    count, depth, level = 0, 0, [root]
    while level:  # breadth first, a level at a time
        depth += 1
        count += len(level)
        below = []
        for node in level:
            if type(node) is yaml.MappingNode:
                for pair in node.value:
                    below.extend(pair)
            elif type(node) is yaml.SequenceNode:
                below.extend(node.value)
        level = below
    _check_bounds(file, written=count, expanded=count, depth=depth)


def parse_yaml(text: str, file: str) -> tuple[Any, Positions]:
    """Parse YAML with the safe loader, rejecting duplicate keys and non-standard tags."""
    import yaml  # here, not at the top: a spec checked before is not parsed (harness.spec.load)

    positions = Positions()
    # libyaml's parser where PyYAML has it (the constructor is Python either way): a 10,000-seed spec parsed in
    # 1.8 s with the pure-Python scanner
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    problems: list[Problem] = []

    def mark(node) -> tuple[int, int]:
        return node.start_mark.line + 1, node.start_mark.column + 1

    def scalar_key(key_node):
        return loader.construct_object(key_node) if isinstance(key_node, yaml.ScalarNode) else None

    def merged_pairs(node, path: Path_) -> list[tuple[str, Any, Any]]:
        """(key, key node, value node) that a mapping's merge keys bring in, resolved here rather than by PyYAML:
        its ``flatten_mapping`` (6.0.x) keeps the first pair of a key across a merged mapping's own merged and
        explicit pairs, so in ``s: &s {<<: *b, t: 1}`` then ``{<<: *s}`` the value of ``t`` came from ``b``, not
        ``s``. Here a merged mapping contributes its effective pairs (its explicit keys over what it merges), and
        of a list of mappings the earlier wins, as the merge-key spec says."""
        found: dict[str, tuple[str, Any, Any]] = {}
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE_TAG:
                continue
            sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            for source in sources:
                if not isinstance(source, yaml.MappingNode):
                    line, col = mark(source)
                    problems.append(Problem(file, line, col, path, "`<<` merges a mapping (or a list of mappings); "
                                                                   f"found {source.id}"))
                    continue
                for key, key_node_, value_node_ in effective_pairs(source, path):
                    found.setdefault(key, (key, key_node_, value_node_))
        return list(found.values())

    def effective_pairs(node, path: Path_) -> list[tuple[str, Any, Any]]:
        pairs = {key: (key, k, v) for key, k, v in merged_pairs(node, path)}
        for key_node, value_node in node.value:
            key = scalar_key(key_node) if key_node.tag != _MERGE_TAG else None
            if isinstance(key, str):
                pairs[key] = (key, key_node, value_node)
        return list(pairs.values())

    def build(node, path: Path_):
        positions.values[path] = mark(node)
        if node.tag not in _STANDARD_TAGS:
            line, col = mark(node)
            problems.append(Problem(file, line, col, path, f"tag {node.tag!r} is not allowed: a spec is plain data"))
            return None
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            explicit = [pair for pair in node.value if pair[0].tag != _MERGE_TAG]
            for key, key_node, value_node in merged_pairs(node, path):  # `<<: *anchor` merge keys come first
                positions.keys[path + (key,)] = mark(key_node)
                out[key] = build(value_node, path + (key,))
            inherited = set(out)
            for key_node, value_node in explicit:
                key = loader.construct_object(key_node) if isinstance(key_node, yaml.ScalarNode) else None
                line, col = mark(key_node)
                if not isinstance(key, str):
                    problems.append(Problem(file, line, col, path, f"keys must be strings, found {describe(key)}"))
                    continue
                if key in out and key not in inherited:
                    first = positions.keys[path + (key,)]
                    problems.append(Problem(
                        file, line, col, path + (key,),
                        f"duplicate key {key!r} (first given on line {first[0]}); YAML would silently keep the last one",
                    ))
                    continue
                positions.keys[path + (key,)] = (line, col)
                inherited.discard(key)  # an explicit key overrides a merged one, once
                out[key] = build(value_node, path + (key,))
            return out
        if isinstance(node, yaml.SequenceNode):
            return [build(child, path + (i,)) for i, child in enumerate(node.value)]
        if node.tag == _STR_TAG:  # what the constructor returns for a string, without its bookkeeping
            return node.value
        return loader.construct_object(node, deep=True)

    try:
        root = loader.get_single_node()
        if root is not None:
            if "&" in text:  # maybe anchors, so aliases: their expansion is measured
                _check_expanded_size(root, file)
            else:  # a tree (no anchor, so no alias): its size and depth as written, in one cheap pass
                _check_tree_size(root, file)
        data = build(root, ()) if root is not None else None
    except RecursionError:
        raise SpecError([Problem(file, 1, 1, (), f"nested too deeply for a spec (at most {MAX_DEPTH} levels)")]) from None
    except yaml.MarkedYAMLError as exc:
        if "maximum nesting depth" in str(exc.problem):  # libyaml's own limit, before Python's recursion one
            raise SpecError([Problem(file, 1, 1, (), f"nested too deeply for a spec (at most {MAX_DEPTH} levels)")]) from None
        m = exc.problem_mark or exc.context_mark
        line, col = (m.line + 1, m.column + 1) if m else (1, 1)
        raise SpecError([Problem(file, line, col, (), f"invalid YAML: {exc.problem or exc}")]) from None
    except yaml.YAMLError as exc:
        raise SpecError([Problem(file, 1, 1, (), f"invalid YAML: {exc}")]) from None
    finally:
        loader.dispose()
    if problems:
        raise SpecError(problems)
    return data, positions
