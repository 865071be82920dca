import ast
import dataclasses
import functools
import os
import re
import sys
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

from hypothesis import settings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# CI runs derandomized, so that a red run is reproducible from its log.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")


def _block_imports_prelude(*packages: str) -> str:
    """Python code that makes importing ``packages`` (and their submodules) fail
    the way it does when they are not installed: for a ``python -c`` child."""
    return (
        "import sys\n"
        "class _Block:\n"
        f"    names = {tuple(packages)!r}\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in self.names:\n"
        "            raise ModuleNotFoundError(f\"No module named '{name}'\")\n"
        "sys.meta_path.insert(0, _Block())\n"
    )


@pytest.fixture
def block_imports():
    """``block_imports("tensorflow", ...)``: a prelude for child processes run
    as if those packages were not installed."""
    return _block_imports_prelude


# ---------------------------------------------------------------------------
# markers: `tf` (needs TensorFlow) and `slow`, declared in setup.cfg
#
# `pytest -m "not tf"` runs without TensorFlow installed. A missing `tf` mark
# shows only on a machine without TensorFlow, so three checks make it fail
# here too:
# 1. at collection, a test whose module, function or same-module fixture
#    imports a TensorFlow package (`import tensorflow`,
#    `pytest.importorskip("tf_slim")`) must be marked `tf`;
# 2. an unmarked test that TensorFlow's absence skips fails instead;
# 3. an unmarked test during which TensorFlow was first imported fails (this
#    only sees runs where no collected module imported it, e.g. `-m "not tf"`).
# What none of them sees (a child process that imports TensorFlow) fails in
# the run without TensorFlow, with ImportError.
# ---------------------------------------------------------------------------

TF_PACKAGES = frozenset({"tensorflow", "tf_slim", "tf_keras", "keras"})
_TF_SKIP = re.compile(r"could not import '(%s)[.']" % "|".join(sorted(TF_PACKAGES)))


@dataclasses.dataclass
class _TfUse:
    """Where a test module imports a TensorFlow package, read from its syntax."""
    module_marked: bool = False  # a top-level `pytestmark` that holds `pytest.mark.tf`
    module_level: list = dataclasses.field(default_factory=list)  # "line N: import ..."
    functions: dict = dataclasses.field(default_factory=dict)  # "f" or "Class.f" -> [...]


def _tf_import(node: ast.AST) -> str | None:
    """The TensorFlow package ``node`` imports, if it is an import of one."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and not node.level:
        names = [node.module or ""]
    elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
            and isinstance(node.args[0].value, str) \
            and getattr(node.func, "attr", getattr(node.func, "id", None)) in (
                "importorskip", "import_module"):
        names = [node.args[0].value]
    else:
        return None
    for name in names:
        if name.split(".")[0] in TF_PACKAGES:
            return name
    return None


def _marks_tf(value: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "tf"
               and isinstance(n.value, ast.Attribute) and n.value.attr == "mark"
               for n in ast.walk(value))


@functools.lru_cache(maxsize=None)
def _tf_use(path: str) -> _TfUse:
    tree = ast.parse(Path(path).read_text(encoding="utf-8"), path)
    use = _TfUse()

    def visit(node: ast.AST, scope: str | None, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = None
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = scope or prefix + child.name  # nested defs count for their test
            elif isinstance(child, ast.ClassDef) and scope is None:
                visit(child, None, prefix + child.name + ".")
                continue
            package = _tf_import(child)
            if package is not None:
                where = f"line {child.lineno}: {package}"
                if scope is None:
                    use.module_level.append(where)
                else:
                    use.functions.setdefault(scope, []).append(where)
            visit(child, name or scope, prefix)

    visit(tree, None, "")
    use.module_marked = any(
        isinstance(s, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in s.targets)
        and _marks_tf(s.value) for s in tree.body)
    return use


def _deselects_tf(config) -> bool:
    """Whether ``-m`` deselects a test marked `tf` (and nothing else)."""
    expression = config.getoption("markexpr", "")
    if not expression:
        return False
    return not Expression.compile(expression).evaluate(lambda mark, **_: mark == "tf")


def pytest_ignore_collect(collection_path, config):
    # Under `-m "not tf"` a module marked `tf` as a whole is not imported: its
    # tests would all be deselected, and without TensorFlow its imports fail.
    if collection_path.suffix == ".py" and collection_path.name.startswith("test_") \
            and _deselects_tf(config) and _tf_use(str(collection_path)).module_marked:
        return True
    return None


_NEEDS_TF_MARK = pytest.StashKey[str]()
_TF_LOADED = pytest.StashKey[bool]()


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("tf") is not None or not str(item.path).endswith(".py"):
            continue
        use = _tf_use(str(item.path))
        function = getattr(item, "originalname", item.name)
        if getattr(item, "cls", None) is not None:
            function = f"{item.cls.__name__}.{function}"
        found = use.module_level + use.functions.get(function, [])
        for fixture in getattr(item, "fixturenames", ()):
            found += use.functions.get(fixture, [])
        if found:
            item.stash[_NEEDS_TF_MARK] = (
                f"{item.nodeid} imports TensorFlow ({', '.join(found)}) but is not marked "
                "`tf`: add @pytest.mark.tf (or `pytestmark = pytest.mark.tf` for the module)")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if _NEEDS_TF_MARK in item.stash:
        pytest.fail(item.stash[_NEEDS_TF_MARK], pytrace=False)
    item.stash[_TF_LOADED] = "tensorflow" in sys.modules


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if item.get_closest_marker("tf") is not None:
        return
    if report.skipped and call.excinfo is not None and _TF_SKIP.search(str(call.excinfo.value)):
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} was skipped for want of TensorFlow "
                           f"({call.excinfo.value}) but is not marked `tf`")
    elif report.when == "teardown" and item.stash.get(_TF_LOADED, True) is False \
            and "tensorflow" in sys.modules and report.passed:
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} imported TensorFlow but is not marked `tf`")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    # a module skipped at import for want of TensorFlow must be marked `tf`
    outcome = yield
    report = outcome.get_result()
    if isinstance(collector, pytest.Module) and report.skipped \
            and _TF_SKIP.search(str(report.longrepr)) and not _tf_use(str(collector.path)).module_marked:
        report.outcome = "failed"
        report.longrepr = (f"{collector.nodeid} was skipped for want of TensorFlow but is not "
                           "marked `tf`: add `pytestmark = pytest.mark.tf` above the import")
