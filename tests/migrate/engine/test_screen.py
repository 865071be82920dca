"""The pipeline's shortcuts change no output.

``tapeshift.migrate.engine.pipeline`` shares one parse and one metadata resolution between the
check analysis and the rules, remembers what a rule gave on a tree, and skips
rules on files that spell none of the names they act on (``tapeshift.migrate.engine.screen``).
These tests hold it to the reference (``settings.reference_mode()``: every
rule run as LibCST runs a codemod on its own) on the examples, the test data
and every TensorFlow program written in the tests, and check each screen
against the rule it stands for.
"""

from __future__ import annotations

import ast
import copy
import functools
import textwrap
from textwrap import dedent
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, QualifiedNameProvider, ScopeProvider

from tapeshift.migrate import checks

from tapeshift.migrate.engine import pipeline, registry, screen
from tapeshift.migrate.rules.compat_fallback import CompatFallback
from tapeshift.migrate.rules.keras_optimizers import V1OptimizersToKeras
from tapeshift.migrate.rules.session import SessionToEager
from tapeshift.migrate.checks.facts import Facts
from tapeshift.migrate.engine.settings import reference_mode
from tapeshift.migrate.engine.toolkit.metadata import QualifiedNames
from tapeshift.migrate.engine.rule import SCRATCH_SHARED, TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.metadata import qualified_names
from tapeshift.migrate.engine.toolkit.names import PACKAGES, import_qualified_names
from tapeshift.migrate.engine.toolkit.starts import StartPositions
from tapeshift.migrate.engine.tf1_api_table import TF1_ONLY

ROOT = Path(__file__).resolve().parents[3]
ALL_RULES = tuple(dict.fromkeys(rule for phase in ("pre", "tape", "check", "check-after", "compat")
                                for rule in registry.phase(phase)))


def _programs(data: str = "tests/**/data/*.py"):
    """(name, source): example and data files (``data``), and the TensorFlow programs in
    the tests."""
    out = []
    for f in sorted({*ROOT.glob("examples/*.py"), *ROOT.glob(data)}):
        out.append((f.relative_to(ROOT).as_posix(), f.read_text(encoding="utf-8")))
    return out + _programs_in_tests()


@functools.lru_cache(maxsize=None)
def _programs_in_tests():
    """(name, source) of each TensorFlow program written in the tests, read once: a
    second LibCST parse of each would double the module's collection time."""
    out = []
    seen = set()
    for f in sorted(p for p in ROOT.glob("tests/*/**/test_*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and "tensorflow" in node.value and "\n" in node.value):
                continue
            source = textwrap.dedent(node.value)
            if source in seen:
                continue
            try:
                cst.parse_module(source)
            except cst.ParserSyntaxError:
                continue
            seen.add(source)
            out.append((f"{f.relative_to(ROOT).as_posix()}:{node.lineno}", source))
    return out


PROGRAMS = _programs()
#: and every program under the data folders (classes, towers, program structure): the
#: test that each screened rule acts somewhere needs them; the others do not, at their cost
ALL_PROGRAMS = _programs("tests/**/data/**/*.py")


def test_there_are_programs_to_compare():
    assert len(PROGRAMS) > 100
    assert any(name.startswith("examples/") for name, _ in PROGRAMS)


def _outcome(result):
    return result.output, result.mode, result.findings, result.changes


#: legacy programs where every kind of rule has work: the shared metadata, the
#: remembered runs and the screen all come into play
LEGACY = [p for p in PROGRAMS if p[0] in (
    "examples/reference_tf1.py", "examples/ddpg_tf1.py", "examples/slim_train_tf1.py",
    "tests/migrate/data/survey_tf1.py")]


@pytest.mark.slow
@pytest.mark.parametrize("name, source", LEGACY, ids=[n for n, _ in LEGACY])
def test_pipeline_matches_every_rule_run_alone(name, source):
    # the options change what the feeds rule writes, and so what the rules after it read
    runs = [("tape", registry.option_names() if "feed_dict" in source else ())]
    if "slim" in source:  # compat mode: the contrib rule's run is remembered
        runs.append(("compat", ()))
    fast = [_outcome(pipeline.migrate_source(source, name, mode, options=options))
            for mode, options in runs]
    with reference_mode():
        slow = [_outcome(pipeline.migrate_source(source, name, mode, options=options))
                for mode, options in runs]
    assert fast == slow


@pytest.mark.slow  # every program, both ways: the full run has it
@pytest.mark.parametrize("name, source", LEGACY[:1], ids=[n for n, _ in LEGACY[:1]])
def test_plain_dispatch_is_libcst_s(name, source):
    """Rules without matcher decorators skip LibCST's matcher bookkeeping: same result."""
    def run_all():
        out = []
        for rule in ALL_RULES:
            context = pipeline.CodemodContext(filename=name)
            context.scratch[SCRATCH_SHARED] = {}
            code = rule(context).transform_module(cst.parse_module(source)).code
            out.append((code, pipeline.findings_of(context), pipeline.changes_of(context)))
        return out

    fast = run_all()
    with reference_mode():
        assert run_all() == fast


#: every fourth program: all of them took 900 s of one worker, most of CI's run;
#: the whole pipeline is compared on the legacy examples above and on a real
#: package byte for byte in test_reference_mode
KEPT_SAMPLE = PROGRAMS[::4]


@pytest.mark.slow
def test_kept_subtrees_change_no_rule_s_result():
    """Every rule on a sample of the programs: the transform that keeps unchanged
    nodes (``KEEP_UNCHANGED``) gives the code, findings and changes of LibCST's visit."""
    def run_all():
        out = []
        for name, source in KEPT_SAMPLE:
            module = cst.parse_module(source)
            for rule in ALL_RULES:
                context = pipeline.CodemodContext(filename=name)
                context.scratch[SCRATCH_SHARED] = {}
                try:
                    code = rule(context).transform_module(module).code
                except Exception as exc:  # the same failure either way
                    code = f"{type(exc).__name__}: {exc}"
                out.append((code, pipeline.findings_of(context), pipeline.changes_of(context)))
        return out

    fast = run_all()
    changed = sum(1 for i, (code, _, _) in enumerate(fast)
                  if code != KEPT_SAMPLE[i // len(ALL_RULES)][1])
    assert changed > 100  # rules at work, not a harness that runs nothing
    with reference_mode():
        assert run_all() == fast


def test_attribute_hooks_still_run_in_plain_dispatch():
    """Plain dispatch drops LibCST's per-child attribute calls only for rules
    without ``visit_<Node>_<field>`` methods."""
    seen = []

    class Hooked(TapeshiftCodemod):
        def visit_Call_func(self, node: cst.Call) -> None:
            seen.append(("visit", cst.Module([]).code_for_node(node.func)))

        def leave_Call_args(self, node: cst.Call) -> None:
            seen.append(("leave", len(node.args)))

    module = cst.parse_module("f(1, 2)\ng.h()\n")
    Hooked(pipeline.CodemodContext()).transform_module(module)
    assert seen == [("visit", "f"), ("leave", 2), ("visit", "g.h"), ("leave", 0)]


SCREENED = [r for r in ALL_RULES if screen.triggers(r) is not None]


@pytest.mark.slow
def _before_rule(rule_name: str, path: str):
    """``path`` as the pre rules before ``rule_name`` leave it, and the facts they
    share (a rule that reads another's facts acts only on its output, with them)."""
    source = (ROOT / path).read_text(encoding="utf-8")
    shared: dict = {}
    for rule in registry.phase("pre"):
        if rule.__name__ == rule_name:
            return source, shared
        tree = pipeline._Tree(cst.parse_module(source), source, parsed=True)
        context = pipeline.CodemodContext(filename=path, wrapper=tree.wrapper)
        context.scratch[SCRATCH_SHARED] = shared
        source = rule(context).transform_module(tree.module).code
    raise AssertionError(rule_name)


@pytest.mark.slow  # every program, both ways: the full run has it
def test_a_screened_rule_acts_only_where_its_names_are_spelled():
    """Every screened rule, run on every program (options on): whatever it
    changes, reports or shares, the program spells one of its trigger names."""
    acted = {rule: 0 for rule in SCREENED}
    evidence = [("compat.v1", ("import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\n"
                               "x = tf.compat.v1.add(1, 2)\n")),
                ("summaries.v1", ("import tensorflow as tf\nx = tf.constant(1.0)\n"
                                  "tf.summary.scalar('x', x)\nmerged = tf.summary.merge_all()\n"
                                  "with tf.Session() as sess:\n    s = sess.run(merged)\n")),
                ("contrib-summary.v1", ("import tensorflow as tf\nw = tf.Variable(1.0)\n"
                                        "tf.contrib.summary.scalar('w', w)\n")),
                # the strategy rule reads the towers and feeds rules' output and facts
                ("towers.v1", *_before_rule("TowersStrategy",
                                            "tests/migrate/data/towers/towers_auto_reuse.py"))]
    for name, source, *facts in [*evidence, *ALL_PROGRAMS]:
        spelled = screen.identifiers(source)
        # the screen matters where it skips a rule; the examples also show the
        # rules at work (else this test could pass for a harness that runs nothing)
        legacy = name.endswith(("_tf1.py", ".v1")) or "/data/" in name
        rules = [r for r in SCREENED if legacy or not screen.may_act(r, spelled)]
        if not rules:
            continue
        tree = pipeline._Tree(cst.parse_module(source), source, parsed=True)
        for rule in rules:
            shared = {option: True for option in registry.option_names()}
            shared.update(copy.deepcopy(facts[0]) if facts else {})
            given = set(shared)
            context = pipeline.CodemodContext(filename=name, wrapper=tree.wrapper)
            context.scratch[SCRATCH_SHARED] = shared
            try:
                new = rule(context).transform_module(tree.module).code
            except Exception:  # the pipeline would report it: skipping the rule would not
                new = None
            if (new != source or pipeline.findings_of(context) or pipeline.changes_of(context)
                    or set(shared) - given):
                acted[rule] += 1
                assert not screen.triggers(rule).isdisjoint(spelled), (name, rule.__name__)
    idle = [rule.__name__ for rule, n in acted.items() if not n]
    assert not idle, f"{idle} did nothing on any program: the test proves nothing for them"


def test_screen_names_come_from_the_rule_tables():
    from tapeshift.migrate.rules import feeds, renames, tf1_only
    from tapeshift.migrate.rules.compat_v1_imports import BEHAVIOUR_SWITCHES, CompatV1ToTF2Imports
    from tapeshift.migrate.rules.keras_optimizers import MAPPINGS

    def last(name):
        return name.rpartition(".")[2]

    assert {last(k) for k in (*renames.RENAMES, *renames.CASTS)} <= screen.triggers(
        renames.RenameTF1Names)
    assert {"compat", *BEHAVIOUR_SWITCHES} <= screen.triggers(CompatV1ToTF2Imports)
    assert set(feeds.SESSIONS) <= screen.triggers(feeds.FeedsToFunctions)
    assert set(MAPPINGS) <= screen.triggers(V1OptimizersToKeras)
    left = screen.triggers(tf1_only.TF1OnlyNamesLeft)
    assert {last(p) for p in TF1_ONLY} | tf1_only.GONE | tf1_only.EAGER_UNSUPPORTED <= left
    assert {last(p) for p in TF1_ONLY - tf1_only.handled()} <= screen.triggers(tf1_only.TF1OnlyNames)
    # a rule without a known set runs everywhere
    assert screen.triggers(SessionToEager) is None
    assert screen.triggers(CompatFallback) is None
    assert screen.may_act(SessionToEager, frozenset())


def test_a_rule_can_declare_its_screen():
    class Declared(TapeshiftCodemod):
        SCREEN_NAMES = frozenset({"frobnicate"})

    class Inherits(Declared):
        pass

    assert not screen.may_act(Declared, frozenset({"tf", "Session"}))
    assert screen.may_act(Declared, frozenset({"frobnicate"}))
    assert screen.triggers(Inherits) is None  # a subclass may act on other names


def test_identifiers_include_words_of_strings_and_comments():
    names = screen.identifiers("x = tf.gradients(y, 'Session')  # contrib\nä_1 = 2\n")
    assert {"x", "tf", "gradients", "y", "Session", "contrib", "ä_1"} <= names
    assert "2" not in names


@pytest.mark.parametrize("name, source", [p for p in PROGRAMS if "gradient" in p[1]],
                         ids=[n for n, s in PROGRAMS if "gradient" in s])
def test_check_screen_skips_only_files_without_findings(name, source):
    facts = Facts(cst.parse_module(source))
    findings = [f for rule in checks.RULES for f in rule.check(facts, name)]
    if findings:
        assert not checks.TRIGGERS.isdisjoint(screen.identifiers(source)), name
        assert not checks.TRIGGERS.isdisjoint(screen.code_identifiers(source)), name


def test_code_identifiers_leave_out_comments_and_strings():
    source = dedent('''\
        """Computes the gradients of the loss."""
        import tensorflow.compat.v1 as tf
        from a.b import c as d
        # tape.gradient(y, x)
        @deco
        def f(p, *q, key=1, **r) -> "jacobian":
            global g
            return tf.nn.relu(p, name=f"{q.attr}")
        class K(Base, metaclass=M):
            pass
        match z:
            case Point(x=xx, y=[*rest]) | {"k": v, **others}:
                pass
    ''')
    names = screen.code_identifiers(source)
    assert names >= {"tensorflow", "compat", "v1", "tf", "a", "b", "c", "d", "deco", "f", "p",
                     "q", "key", "r", "g", "nn", "relu", "name", "attr", "K", "Base", "metaclass",
                     "M", "z", "Point", "x", "xx", "y", "rest", "v", "others"}
    assert names.isdisjoint({"Computes", "gradients", "gradient", "jacobian", "k"})
    assert "gradients" in screen.identifiers(source)
    assert screen.code_identifiers("print 'python 2'\n") is None


def test_the_check_analysis_is_not_run_for_words_in_docstrings(monkeypatch):
    source = '"""The gradients of ..."""\nimport tensorflow as tf\nx = tf.ones(1) * 2.0\n'
    monkeypatch.setattr(checks, "Facts", lambda *a, **k: pytest.fail("analysed"))
    assert checks.check_source(source, "d.py").findings == ()
    spoken = source.replace("x = ", "x = tf.gradients(y, w)[0]\nz = ")
    with pytest.raises(pytest.fail.Exception):
        checks.check_source(spoken, "d.py")


@pytest.mark.parametrize("name, source", [
    # the legacy examples in the quick loop; the other examples and the data files in the full run
    p if p[0].startswith("examples/") and p[0].endswith("_tf1.py") else pytest.param(*p, marks=pytest.mark.slow)
    for p in PROGRAMS if p[0].startswith(("examples/", "tests/migrate/data"))],
    ids=lambda v: v if "/" in str(v)[:40] else "")
def test_qualified_names_on_demand_are_libcst_s(name, source):
    module = cst.parse_module(source)
    libcst_names = MetadataWrapper(module, unsafe_skip_copy=True).resolve(QualifiedNameProvider)
    with reference_mode():  # the scope analysis path, every name
        ours = qualified_names(MetadataWrapper(module, unsafe_skip_copy=True))
    for node, names in libcst_names.items():
        names = names() if callable(names) else names
        assert set(ours[node]) == set(names), (name, type(node).__name__)
    assert set(ours) <= set(libcst_names)


@pytest.mark.slow
@pytest.mark.parametrize("name, source", PROGRAMS, ids=lambda v: v if "/" in str(v)[:40] else "")
def test_qualified_names_from_imports_are_libcst_s_tensorflow_names(name, source):
    """Where the fast path answers, every node's TensorFlow / tf-slim names are
    LibCST's; where it declines, the scope analysis answers."""
    module = cst.parse_module(source)
    libcst_names = MetadataWrapper(module, unsafe_skip_copy=True).resolve(QualifiedNameProvider)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    fast = import_qualified_names(module, StartPositions(module))
    ours = qualified_names(wrapper)
    assert (fast is None) == isinstance(ours, QualifiedNames)
    for node, names in libcst_names.items():
        names = names() if callable(names) else names
        want = {q for q in names if q.name.split(".")[0] in PACKAGES}
        assert {q for q in ours[node] if q.name.split(".")[0] in PACKAGES} == want, \
            (name, type(node).__name__, module.code_for_node(node)[:60])
    for node in StartPositions(module):  # nodes LibCST gives no scope read as empty
        if node not in libcst_names:
            assert not ours[node], (name, type(node).__name__)


def test_most_programs_take_the_fast_path():
    declined = [name for name, source in PROGRAMS
                if import_qualified_names(m := cst.parse_module(source), StartPositions(m)) is None]
    assert len(declined) < len(PROGRAMS) / 10, declined


@pytest.mark.slow  # every program, both ways: the full run has it
def test_facts_from_python_s_parser_are_the_matcher_s():
    """Facts asks Python's parser for ``.numpy()`` calls when it has the source."""
    for name, source in PROGRAMS:
        if "numpy" not in source or checks.TRIGGERS.isdisjoint(screen.identifiers(source)):
            continue
        module = cst.parse_module(source)
        assert Facts(module, source=source).used_api == Facts(module).used_api, name


def test_rules_reading_one_tree_share_one_scope_analysis(monkeypatch):
    """The scope analysis runs once for the checks and all the rules that read
    the original tree (LibCST alone would run it once per rule)."""
    source = (ROOT / "examples" / "reference_tf1.py").read_text(encoding="utf-8")
    calls = []
    resolve = MetadataWrapper.resolve

    def counting(self, provider):
        if provider is ScopeProvider and provider not in self._metadata:
            calls.append(self)
        return resolve(self, provider)

    monkeypatch.setattr(MetadataWrapper, "resolve", counting)
    result = pipeline.migrate_source(source, "reference_tf1.py")
    assert result.mode == "tape"
    # the original tree once, and each rewritten version of it at most once
    assert len(calls) == len(set(map(id, calls)))
    assert len(calls) <= 3


class _Watched(dict):
    """Shared facts that note every look."""

    touched = False

    def _note(name):  # a decorator factory, in the class body
        def method(self, *args, **kwargs):
            self.touched = True
            return getattr(dict, name)(self, *args, **kwargs)
        return method

    for _name in ("__getitem__", "__setitem__", "__contains__", "__iter__", "__len__", "get",
                  "setdefault", "pop", "update", "keys", "items", "values", "clear"):
        locals()[_name] = _note(_name)
    del _name


def test_a_rule_that_uses_no_shared_facts_neither_reads_nor_writes_them():
    """The pipeline reuses such a rule's run whatever the shared facts (the
    contrib rule in the fallback): it must not look at them."""
    free = [r for p in registry.PHASES for r in registry.phase(p)
            if not getattr(r, "USES_SHARED_FACTS", True)]
    assert free
    ran = 0
    for name, source in PROGRAMS:
        module = cst.parse_module(source)
        for rule in free:
            if not screen.may_act(rule, screen.identifiers(source)):
                continue
            shared = _Watched(tf_function=True)
            context = pipeline.CodemodContext(filename=name)
            context.scratch[SCRATCH_SHARED] = shared
            rule(context).transform_module(module)
            assert not shared.touched, (name, rule.__name__)
            ran += 1
    assert ran > 5
