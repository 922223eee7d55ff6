"""``harness new``: the skeleton of a new comparison, in the repository's own layout.

Where the files go, and why there: someone who cloned the repository to add a paper sends it back as a change to
the repository, so a new family is written where the repository keeps every paper (``harness/tasks/<family>/``,
``implementations/<name>/``, ``baselines/<name>.py``, ``specs/<name>.yaml``, ``tests/test_<name>.py``). The
registry scans ``harness/tasks/*/catalogue.py`` and the editable install maps the checkout's packages, so the
files are found at once, with no reinstall and no ``HARNESS_PLUGINS``. A method for an outside plugin's family
goes beside that plugin's catalogue instead (its spec and test under the plugin's project folder), so the plugin
stays one package. Nothing is ever overwritten; the only file changed is the family's catalogue, which gets the
new method's row.

Imported only by the ``new`` command: ``harness --help`` never loads it.
"""
from __future__ import annotations

import ast
import importlib.util
import inspect
import keyword
import os
import re
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.scaffold import templates as t

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")
MAX_NAME = 40  # leaves room for the ids built from it (`<name>-beats-trivial`) within a spec identifier's 64
METRIC = "abs_error"
TASK_FILE = "estimate"
BUILTIN_NAMES = {"None", "int", "float", "str", "bool", "bytes", "dict", "list", "tuple", "set", "frozenset",
                 "object", "type", "complex"}


class ScaffoldError(Exception):
    """What ``harness new`` refuses, in one line; nothing was written."""


@dataclass
class Plan:
    """The files to write (path → text) and the catalogue to extend (path → its new text), checked before any write."""

    files: dict[Path, str] = field(default_factory=dict)
    edits: dict[Path, str] = field(default_factory=dict)
    modules: list[str] = field(default_factory=list)  # modules the plan creates: none may exist already
    spec: Path | None = None


def check_name(name: str) -> str:
    """``name`` unchanged when it can name a spec, a method and a Python package; else :class:`ScaffoldError`."""
    if not NAME_PATTERN.match(name) or len(name) > MAX_NAME:
        raise ScaffoldError(f"NAME {name!r} is not a name harness new can use: lower-case letters and digits, words "
                            f"joined by single '-' or '_', starting with a letter, at most {MAX_NAME} characters "
                            "(e.g. robust-mean)")
    if keyword.iskeyword(module_name(name)):
        raise ScaffoldError(f"NAME {name!r} is a Python keyword and cannot name a package; choose another")
    return name


def module_name(name: str) -> str:
    return name.replace("-", "_")


def class_name(name: str) -> str:
    return "".join(word.capitalize() for word in re.split(r"[-_]", name))


def checkout_root() -> Path | None:
    """The repository checkout the running harness is imported from (an editable install), or None."""
    import harness

    root = Path(harness.__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() and (root / "harness" / "tasks").is_dir() else None


def _root(directory: Path | None) -> Path:
    if directory is not None:
        return directory
    root = checkout_root()
    if root is None:
        import harness

        raise ScaffoldError(f"harness runs from an installed copy ({Path(harness.__file__).parent}), not a checkout: "
                            "clone the repository and `pip install -e .` there, or name a checkout with --dir")
    return root


def _schema_from(spec_dir: Path) -> str:
    import harness

    schema = Path(harness.__file__).resolve().parent / "spec" / "schema.json"
    return os.path.relpath(schema, spec_dir.resolve())


# --- a new family ------------------------------------------------------------------------------------------------

def new_family(name: str, directory: Path | None) -> Plan:
    """A task family, its method, baseline and trivial answer, a spec and a test, all runnable as written."""
    from harness.registry import default_registry

    root = _root(directory)
    pkg = module_name(name)
    words = {"name": name, "pkg": pkg, "camel": class_name(name), "family": pkg, "task": f"{pkg}.{TASK_FILE}",
             "task_module": f"harness.tasks.{pkg}.{TASK_FILE}", "task_file": TASK_FILE,
             "task_class": f"{class_name(pkg)}Task", "dataset": f"{name}-gaussian", "baseline": f"{name}-median",
             "trivial": f"{name}-zero", "metric": METRIC, "schema": _schema_from(root / "specs")}
    family = root / "harness" / "tasks" / pkg
    plan = Plan(modules=[f"harness.tasks.{pkg}", f"implementations.{pkg}", f"baselines.{pkg}"],
                spec=root / "specs" / f"{name}.yaml")
    plan.files = {
        family / "__init__.py": t.FAMILY_INIT.substitute(words),
        family / "catalogue.py": t.CATALOGUE.substitute(words),
        family / f"{TASK_FILE}.py": t.TASK.substitute(words),
        root / "implementations" / pkg / "__init__.py": t.METHOD_INIT.substitute(words),
        root / "implementations" / pkg / "_method.py": t.METHOD.substitute(words),
        root / "baselines" / f"{pkg}.py": t.BASELINES.substitute(words),
        plan.spec: t.FAMILY_SPEC.substitute(words),
        root / "tests" / f"test_{pkg}.py": t.FAMILY_TEST.substitute(words),
    }
    _refuse_existing(plan)
    registry = default_registry()
    wanted = [("tasks", task) for task in registry.names("tasks") if task.split(".")[0] == pkg]
    wanted += [(kind, words[key]) for kind, key in (("methods", "name"), ("methods", "baseline"),
                                                     ("methods", "trivial"), ("datasets", "dataset"))]
    taken = [(kind, n) for kind, n in wanted if n in registry.names(kind)]
    if taken:
        kind, n = taken[0]
        raise ScaffoldError(f"{kind[:-1]} {n!r} is already registered (by {registry.entry(kind, n).origin}); "
                            "choose another NAME")
    known = registry.metrics.get(METRIC)
    if known is not None and (known.goal, known.unit) != ("min", ""):
        raise ScaffoldError(f"metric {METRIC!r} is declared as {known.goal} [{known.unit}] by "
                            f"{registry.metric_origins[METRIC]}; the skeleton's is min []: rename it by hand")
    return plan


# --- a method for an existing family ------------------------------------------------------------------------------

def new_method(name: str, directory: Path | None, family: str | None, from_spec: Path | None) -> Plan:
    """A method of an existing family's task, its catalogue row, a spec and a test. The method starts as one the
    task already has (:func:`_starting_method`), each call of the task's protocol written out to call that one's,
    so that it runs as written; the spec compares the two. The spec starts from ``from_spec`` (its task, datasets,
    metrics and methods) when given."""
    from harness.registry import default_registry

    registry = default_registry()
    source = _read_spec(from_spec) if from_spec is not None else None
    task_name = _task_of(registry, family) if family is not None else None
    if source is not None:
        if task_name is not None and task_name != source["task"]:
            raise ScaffoldError(f"--family {family} is task {task_name!r}, but {from_spec} is a spec of task "
                                f"{source['task']!r}: leave --family out, or name that spec's family")
        task_name = source["task"]
    missing = registry.missing_extra(task_name)
    if missing:
        raise ScaffoldError(missing)
    origin = registry.entry("tasks", task_name).origin
    catalogue_module, attr = _catalogue_of(origin)
    catalogue_file = _module_file(catalogue_module)
    pkg, camel = module_name(name), class_name(name)
    in_repo = origin.startswith("harness.tasks.")
    if in_repo:
        root = _root(directory)
        module = f"implementations.{pkg}"
        method_file = root / "implementations" / pkg / "_method.py"
    else:  # an outside plugin: the method beside its catalogue, the spec and test in the plugin's project folder
        package = catalogue_module if catalogue_file.name == "__init__.py" else catalogue_module.rpartition(".")[0]
        module = f"{package}.{pkg}" if package else pkg
        method_file = catalogue_file.parent / f"{pkg}.py"
        depth = len(package.split(".")) if package else 0
        project = catalogue_file.parent.parents[depth - 1] if depth else catalogue_file.parent
        root = directory if directory is not None else project
    try:
        task = registry.load("tasks", task_name)
    except Exception as exc:  # a family that does not import here: its own message, in a line
        raise ScaffoldError(f"task {task_name!r} does not load: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    calls, imports = _protocol_calls(task.protocol)
    than = _partner(source["methods"]) if source is not None else None
    compared = next((m["name"] for m in source["methods"] if m.get("id", m["name"]) == than), None) if than else None
    start = _starting_method(registry, task, [call for call, *_ in calls], compared)
    words = {"name": name, "pkg": pkg, "camel": camel, "task": task_name, "starting": start,
             "protocol": task.protocol.__name__, "protocol_module": task.protocol.__module__}
    parameters = ", ".join(f"{k}={v!r}" for k, v in registry.parameters("methods", start).items())
    if len(parameters) > 60:
        parameters = ", ".join(registry.parameters("methods", start))
    method_text = t.STARTED_METHOD.substitute(words, imports=imports, parameters=parameters or "none", calls="".join(
        t.STARTED_CALL.substitute(words, call=call, arguments=arguments, returns=returns, docstring=doc,
                                  forwarded=forwarded)
        for call, arguments, returns, doc, forwarded in calls))
    plan = Plan(modules=[module], spec=root / "specs" / f"{name}.yaml")
    if in_repo:
        plan.files[method_file.parent / "__init__.py"] = t.METHOD_INIT.substitute(words)
    plan.files[method_file] = method_text
    schema = _schema_from(plan.spec.parent)
    if source is not None:
        plan.files[plan.spec] = _spec_from(source, from_spec, name, schema)
    else:
        plan.files[plan.spec] = _spec_for(registry, task, name, schema, start)
    plan.files[root / "tests" / f"test_{pkg}.py"] = t.METHOD_TEST.substitute(
        words, module=module, calls="[" + ", ".join(f'"{call}"' for call, *_ in calls) + "]")
    _refuse_existing(plan)
    if name in registry.names("methods"):
        raise ScaffoldError(f"method {name!r} is already registered (by {registry.entry('methods', name).origin}); "
                            "choose another NAME")
    target = f"{module}:{camel}"
    plan.edits[catalogue_file] = _with_row(catalogue_file, attr, name, task_name, target)
    return plan


def _task_of(registry, family: str) -> str:
    """The task ``--family`` names: a task's name, or a family with exactly one task."""
    from harness.registry import suggest

    tasks = registry.names("tasks")
    if family in tasks:
        return family
    members = [task for task in tasks if task.split(".")[0] == family]
    if len(members) == 1:
        return members[0]
    if members:
        raise ScaffoldError(f"family {family!r} has {len(members)} tasks ({', '.join(members)}): name one, e.g. "
                            f"--family {members[0]}")
    families = sorted({task.split(".")[0] for task in tasks})
    raise ScaffoldError(f"unknown family {family!r}{suggest(family, families + tasks)}; families: "
                        f"{', '.join(families)} (`harness list tasks` shows their tasks)")


def _starting_method(registry, task, calls: list[str], compared: str | None) -> str:
    """The method a new method of ``task`` starts as, so that it runs before its author writes a line: the one the
    source spec compares it with (``compared``), else the task's trivial answer (a catalogue row marked trivial),
    else its first baseline (a target under a ``baselines`` package, where the repository keeps them), else its
    first method; the first of these that is a class with every call of the task's protocol (a trivial answer of a
    protocol of its own has not)."""
    methods = registry.names("methods", task.name)
    baselines = [m for m in methods if "baselines" in registry.entry("methods", m).target.partition(":")[0].split(".")]
    order = [*([compared] if compared else []), *registry.trivial_methods(task.name), *baselines, *methods]
    for method in dict.fromkeys(order):
        try:
            cls = registry.load("methods", method)
        except Exception:  # a method that does not import here cannot be started from
            continue
        if inspect.isclass(cls) and all(callable(getattr(cls, call, None)) for call in calls):
            return method
    raise ScaffoldError(f"task {task.name!r} has no method here that is a class with every call of "
                        f"{task.protocol.__name__} ({', '.join(calls)}) for the new method to start from: register one "
                        "first")


def _catalogue_of(origin: str) -> tuple[str, str]:
    """(module, attribute) of the catalogue that registered ``origin``'s names."""
    from harness.registry import CATALOGUE_MODULE, ENTRY_POINT_GROUP, FAMILIES_PACKAGE, PLUGINS_VARIABLE

    if origin.startswith(FAMILIES_PACKAGE + "."):
        return f"{origin}.{CATALOGUE_MODULE}", "CATALOGUE"
    if origin in [target.strip() for target in os.environ.get(PLUGINS_VARIABLE, "").split(",")]:
        module, _, attr = origin.partition(":")
        return module.strip(), attr.strip()
    from harness.cache import entry_points

    for dist, entry, _, module, attr in entry_points(ENTRY_POINT_GROUP):
        if f"{dist if dist is not None else '?'}:{entry}" == origin:
            return module, attr or ""
    raise ScaffoldError(f"cannot find the catalogue of {origin}; add the method's row to it by hand")


def _module_file(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise ScaffoldError(f"the catalogue module {module} has no source file here; add the method's row by hand")
    return Path(spec.origin)


def _protocol_calls(protocol: type) -> tuple[list[tuple[str, str, str, str, str]], str]:
    """Each call of ``protocol`` the conformance test checks, as (name, arguments, ' -> returns', docstring lines,
    the arguments passed on to the same call of another method), and the imports its annotations need (under
    ``TYPE_CHECKING``: the generated method imports nothing more at run time)."""
    names = [n for n in vars(protocol) if not n.startswith("_") and callable(getattr(protocol, n))]
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(protocol)))
        defs = {node.name: node for node in tree.body[0].body if isinstance(node, ast.FunctionDef)}
    except (OSError, TypeError, SyntaxError, IndexError, AttributeError):
        defs = {}
    calls, used = [], set()
    for call in names:
        node = defs.get(call)
        forwarded = _forwarded(inspect.signature(getattr(protocol, call)))
        if node is None:
            arguments = ", ".join(inspect.signature(getattr(protocol, call)).parameters)
            calls.append((call, arguments, "", "", forwarded))
            continue
        args = node.args
        parameters = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        for part in [*(a.annotation for a in parameters if a is not None), node.returns]:
            if part is not None:
                used |= {n.id for n in ast.walk(part) if isinstance(n, ast.Name)}
        paragraph = " ".join((ast.get_docstring(node) or "").strip().split("\n\n")[0].split())
        first = re.split(r"(?<=\.) (?=[A-Z(`])", paragraph)[0]  # its first sentence
        docstring = f'        """{first}"""\n' if first and '"""' not in first and "\\" not in first else ""
        returns = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
        calls.append((call, ast.unparse(node.args), returns, docstring, forwarded))
    return calls, _imports_for(used - BUILTIN_NAMES, protocol)


def _forwarded(signature: inspect.Signature) -> str:
    """The arguments of a call with ``signature`` (``self`` left out), passed on as they came: ``x, *args, k=k``."""
    p = inspect.Parameter
    written = {p.POSITIONAL_ONLY: "{}", p.POSITIONAL_OR_KEYWORD: "{}", p.VAR_POSITIONAL: "*{}",
               p.KEYWORD_ONLY: "{0}={0}", p.VAR_KEYWORD: "**{}"}
    return ", ".join(written[parameter.kind].format(parameter.name)
                     for parameter in list(signature.parameters.values())[1:])


def _imports_for(names: set[str], protocol: type) -> str:
    """The import lines that bind ``names`` in the protocol's module, as a ``TYPE_CHECKING`` block."""
    module = inspect.getmodule(protocol)
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError, SyntaxError):
        return ""
    lines: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                if bound in names:
                    lines[bound] = f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
        elif isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__" and not node.level:
            for alias in node.names:
                bound = alias.asname or alias.name
                if bound in names:
                    lines[bound] = f"from {node.module} import {alias.name}" + (
                        f" as {alias.asname}" if alias.asname else "")
    for node in tree.body:  # names the module defines itself
        defined = [node.name] if isinstance(node, (ast.ClassDef, ast.FunctionDef)) else [
            target.id for target in getattr(node, "targets", [getattr(node, "target", None)])
            if isinstance(target, ast.Name)]
        for bound in defined:
            if bound in names and bound not in lines:
                lines[bound] = f"from {module.__name__} import {bound}"
    if not lines:
        return ""
    body = "".join(f"    {line}\n" for line in sorted(set(lines.values())))
    return f"\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:  # the protocol's annotations\n{body}"


def _with_row(path: Path, attr: str, name: str, task: str, target: str) -> str:
    """The catalogue's text with ``name``'s row added at the end of its ``methods`` section."""
    text = path.read_text(encoding="utf-8")
    by_hand = f"write its 'methods' as a dict literal, or add the row for {target} to it by hand"
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise ScaffoldError(f"{path}: does not parse ({exc.msg}, line {exc.lineno})") from None
    catalogue = None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        if any(isinstance(x, ast.Name) and x.id == attr for x in targets) and isinstance(node.value, ast.Dict):
            catalogue = node.value
    methods = None if catalogue is None else next(
        (v for k, v in zip(catalogue.keys, catalogue.values) if isinstance(k, ast.Constant) and k.value == "methods"),
        None)
    if not isinstance(methods, ast.Dict):
        raise ScaffoldError(f"{path}: {attr} has no literal 'methods' dict to add {name!r} to: {by_hand}")
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def at(lineno: int, col: int) -> int:  # ast columns are UTF-8 byte offsets
        return offsets[lineno - 1] + len(lines[lineno - 1].encode("utf-8")[:col].decode("utf-8"))

    close = at(methods.end_lineno, methods.end_col_offset) - 1  # the dict's closing brace
    if methods.values:  # a comma after the last row, if it has none
        end = at(methods.values[-1].end_lineno, methods.values[-1].end_col_offset)
        if "," not in re.sub(r"#[^\n]*", "", text[end:close]):
            text, close = text[:end] + "," + text[end:], close + 1
    line_start = text.rfind("\n", 0, close) + 1
    before = text[line_start:close]
    if methods.keys and methods.keys[-1] is not None:
        indent = " " * methods.keys[-1].col_offset
    else:
        indent = " " * (len(before) - len(before.lstrip()) + 4)
    row = t.METHOD_ROW.substitute(indent=indent, name=name, task=task, target=target)
    if before.strip() == "":  # the brace on a line of its own: the row goes on the lines before it
        new = text[:line_start] + row + text[line_start:]
    else:
        new = text[:close] + "\n" + row + " " * max(len(indent) - 4, 0) + text[close:]
    try:
        ast.parse(new)
    except SyntaxError:
        raise ScaffoldError(f"{path}: cannot add {name!r} to its 'methods' safely: {by_hand}") from None
    return new


# --- the spec of a method for an existing family -----------------------------------------------------------------

def _dump(key: str, value: Any) -> str:
    """``{key: value}`` as the repository's specs write YAML: nested sequences indented, no anchors, leaves in flow
    style."""
    import yaml

    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data):
            return True

        def increase_indent(self, flow=False, indentless=False):
            return super().increase_indent(flow, False)

    return yaml.dump({key: value}, Dumper=Dumper, sort_keys=False, default_flow_style=None, allow_unicode=True,
                     width=118)


def _read_spec(path: Path) -> dict:
    from harness.spec.load import SpecError, validate_spec
    from harness.store import load_yaml

    if not path.is_file():
        raise ScaffoldError(f"--from-spec {path}: no such spec file")
    try:
        validate_spec(path)
    except SpecError as exc:
        raise ScaffoldError(f"--from-spec {path} is not a valid spec: {str(exc).strip().splitlines()[0]}") from None
    return load_yaml(path.read_text(encoding="utf-8"))


def _partner(methods: list[dict]) -> str | None:
    """The id a new method is first compared with: the trivial row, else the source spec's own method, else its
    first baseline."""
    for kind in ("trivial", "implementation", "baseline", None):
        for method in methods:
            if kind is None or method.get("kind") == kind:
                return method.get("id", method["name"])
    return None


def _claim(name: str, than: str | None, metric: str) -> str:
    if than is None:
        return f"{t.TODO} the paper's claim (the task has no other method to compare with yet)\nclaims: []\n"
    claim_id = f"{name}-beats-{than}"  # a spec identifier: at most 64 characters
    return t.METHOD_SPEC_CLAIM.substitute(name=name, than=than, metric=metric,
                                        claim_id=claim_id if len(claim_id) <= 64 else f"{name}-beats-baseline")


def _new_entry(name: str) -> str:
    return (f"  {t.TODO} tune {name}'s hyper-parameters alike: search: {{lr: {{float: [1.0e-4, 1.0e-1], log: true}}}}\n"
            f"  - {{name: {name}, kind: implementation}}\n")


def _spec_from(source: dict, path: Path, name: str, schema: str) -> str:
    """``source``'s task, datasets, metrics, methods, seeds, tuning, hardware and profiles, with ``name`` added
    everywhere a method list is written; its claims, acknowledgements and prose left out (a new comparison's)."""
    import copy

    source = copy.deepcopy(source)
    ids = [m.get("id", m["name"]) for m in source["methods"]]
    if name in ids:
        raise ScaffoldError(f"{path} already has a method {name!r}; choose another NAME")

    def add_to_datasets(datasets):
        if isinstance(datasets, list):
            for dataset in datasets:
                if isinstance(dataset.get("methods"), list):
                    dataset["methods"].append(name)
        elif isinstance(datasets, dict):
            for patch in datasets.values():
                if isinstance(patch, dict) and isinstance(patch.get("methods"), list):
                    patch["methods"].append(name)

    add_to_datasets(source["datasets"])
    profiles = {}
    for profile, body in (source.get("profiles") or {}).items():
        body = {k: v for k, v in body.items() if k not in ("claims", "audit", "title", "description")}
        add_to_datasets(body.get("datasets"))
        if isinstance(body.get("methods"), list):
            body["methods"].append({"name": name, "kind": "implementation"})
        profiles[profile] = body
    than = _partner(source["methods"])
    for method in source["methods"]:  # NAME is this comparison's method: the source's own are compared with it
        if method.get("kind") == "implementation":
            method["kind"] = "baseline"
    parts = [t.METHOD_SPEC_HEAD.substitute(name=name, source=f" from {path}", schema=schema, than=than or "nothing",
                                         task=source["task"]),
             _dump("datasets", source["datasets"]), _dump("methods", source["methods"]) + _new_entry(name),
             _dump("metrics", source["metrics"])]
    parts += [_dump(key, source[key]) for key in ("seeds", "tuning", "hardware") if key in source]
    parts.append(_claim(name, than, source["metrics"]["primary"]))
    if profiles:
        parts.append(_dump("profiles", profiles))
    return "".join(parts)


def _spec_for(registry, task, name: str, schema: str, start: str) -> str:
    """A spec of ``task``: each of its datasets at its loader's defaults (at the task's tiny parameters in the quick
    profile), ``name`` against ``start``, the method it starts as (a tie until its author writes it)."""
    datasets = registry.names("datasets", task.name)
    kind = "trivial" if start in registry.trivial_methods(task.name) else "baseline"
    metrics = registry.task_metrics(task.name)
    primary = next((m for m, d in metrics.items() if not d.role and not d.spread_of and d.unit != "s"),
                   next(iter(metrics)))
    with tempfile.TemporaryDirectory() as workdir:
        try:
            tiny = task.tiny(Path(workdir))
        except Exception:  # the quick profile then runs the loaders' defaults; the author sets it
            tiny = {}
        quick = {d: {"params": p} for d, p in tiny.items() if d in datasets and isinstance(p, dict) and p
                 and workdir not in repr(p) and _plain(p)}
    head = t.METHOD_SPEC_HEAD.substitute(name=name, source="", schema=schema, than=start, task=task.name)
    listed = "".join(f"  - {{name: {d}}}\n" for d in datasets)
    parts = [head, f"datasets:\n  {t.TODO} the parameters the claim is tested at (here each loader's defaults)\n",
             listed, "methods:\n", _new_entry(name), f"  - {{name: {start}, kind: {kind}}}\n",
             f"metrics: {{primary: {primary}}}\n", "seeds: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n",
             f"{t.TODO} trials (and a sampler) once the method has a search space\n", "tuning: {trials: 0}\n",
             f"hardware: {{device: {'auto' if task.framework else 'cpu'}, threads: 1, timeout_s: 600}}\n",
             _claim(name, start, primary)]
    profile = {"seeds": [0, 1, 2, 3, 4], **({"datasets": quick} if quick else {})}  # quick: the task's tiny sizes
    parts.append(f"{t.TODO} the paper profile's sizes and seeds (requires: data or gpu where it needs them)\n")
    parts.append(_dump("profiles", {"quick": profile, "default": {}, "paper": {"seeds": list(range(20))}}))
    return "".join(parts)


def _plain(value: Any) -> bool:
    """Whether ``value`` is YAML's plain data (what a spec can hold)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (str, bool, int, float))


# --- writing -----------------------------------------------------------------------------------------------------

def write(plan: Plan) -> list[Path]:
    """Write ``plan``, refusing before any write when one of its files or modules exists already."""
    _refuse_existing(plan)
    written = []
    for path, text in plan.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "x", encoding="utf-8") as out:  # "x": a file that appeared meanwhile is not overwritten
            out.write(text)
        written.append(path)
    for path, text in plan.edits.items():
        partial = path.with_name(f".{path.name}.harness-new")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    return written


def _refuse_existing(plan: Plan) -> None:
    """:class:`ScaffoldError` naming the first of ``plan``'s files, or of the modules it creates, that exists."""
    for path in plan.files:
        if path.exists():
            raise ScaffoldError(f"{_shown(path)} already exists; harness new never overwrites a file (choose another "
                                "NAME, or move the file away)")
    for module in plan.modules:
        try:
            found = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            found = None
        if found is not None:
            where = found.origin or ", ".join(found.submodule_search_locations or [])
            raise ScaffoldError(f"module {module} already exists ({where}); choose another NAME")


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def command(name: str, family: str | None, from_spec: Path | None, directory: Path | None) -> list[str]:
    """Plan, check and write; the lines to print."""
    check_name(name)
    if family is None and from_spec is None:
        plan = new_family(name, directory)
    else:
        plan = new_method(name, directory, family, from_spec)
    written = write(plan)
    marked = {path: text.count(t.TODO) for path, text in [*plan.files.items(), *plan.edits.items()]}
    lines = [f"wrote {_shown(path)}" + (f" ({marked[path]} TODO(author))" if marked[path] else "") for path in written]
    lines += [f"added method {name!r} to {_shown(path)} (1 TODO(author))" for path in plan.edits]
    todo = sum(marked[path] for path in written) + len(plan.edits)
    spec = _shown(plan.spec)
    lines.append(f"next: fill in the {todo} lines marked # TODO(author): above, then `harness validate {spec}` and "
                 f"`harness run {spec} --profile quick`")
    return lines
