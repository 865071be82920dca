"""The rule registry: a rule declares everything about itself, and a rule added
through the registry (as a real rule is) runs in its phase, is screened by its
names, has its codes documented and its option offered on the command line."""

import argparse

import libcst as cst
import pytest

from tapeshift.migrate.commands import migrate as command
from tapeshift.migrate.engine import registry
from tapeshift.migrate.engine.findings import REGISTRY, CodeInfo, Severity
from tapeshift.migrate.engine.registry import codes_markdown
from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.engine.registry import RuleOption, register_rule, unregister_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.rules import tf1_only

TS199 = CodeInfo(
    code="TS199",
    name="frobnicate-call",
    severity=Severity.INFO,
    summary="a tf.frobnicate call",
    what="Notes each `tf.frobnicate` call.",
    why="A rule defined in a test.",
    example="y = tf.frobnicate(x)",
    use_instead="y = x",
    fix_safety="Nothing is changed.",
)


class Frobnicate(TapeshiftCodemod):
    DESCRIPTION = "Note tf.frobnicate calls (a rule defined in a test)."
    RULE = "frobnicate"
    PHASE = "tape"
    ORDER = 45  # between the Keras optimizers (40) and the imports rule (50)
    CODES = (TS199,)
    HANDLES = frozenset({"frobnicate"})
    SCREEN_NAMES = frozenset({"frobnicate"})
    OPTION = RuleOption("frobnicate_loudly", "--frobnicate-loudly", "say more about frobnicate")
    runs: list = []  # the option's value in each run of the rule

    def visit_Module(self, node: cst.Module) -> bool:
        Frobnicate.runs.append(bool(self.shared.get("frobnicate_loudly")))
        return True

    def visit_Call(self, node: cst.Call) -> None:
        if self.is_tf(node.func, "frobnicate"):
            self.report(TS199.code, node, "tf.frobnicate call")


@pytest.fixture
def frobnicate():
    Frobnicate.runs = []
    register_rule(Frobnicate)
    try:
        yield Frobnicate
    finally:
        unregister_rule(Frobnicate)


SOURCE = "import tensorflow as tf\n\ny = tf.frobnicate(tf.constant(1.0))\n"


def test_the_order_of_the_rules_is_declared_by_the_rules():
    names = {p: [r.__name__ for r in registry.phase(p)] for p in registry.PHASES}
    assert names == {
        "pre": ["ContribToTfSlim", "CustomGradientsToTape", "DefaultGraphBlocks", "Towers",
                "GradientTargets",
                "ModelCode", "SummariesToWriter", "SaversToEager", "FeedsToFunctions",
                "ClassVariableLocals", "ClassFeedsToMethods", "TowersStrategy"],
        "tape": ["SessionToEager", "GradientsToTape", "RenameTF1Names", "ContribSummaryToTF2",
                 "V1OptimizersToKeras", "CompatV1ToTF2Imports"],
        "check": ["TF1OnlyNames"],
        "check-after": ["TF1OnlyNamesLeft"],
        "compat-pre": ["ContribToTfSlim"],
        "compat": ["CompatFallback"],
        "compat-post": ["LayersToTfKeras", "RnnCellsToTfKeras", "ContribSummaryToTF2"],
    }
    assert registry.option_names() == ("tf_function", "keras_optimizers")


def test_an_added_rule_runs_in_its_phase(frobnicate):
    tape = registry.phase("tape")
    assert tape.index(frobnicate) == len(tape) - 2  # before the imports rule (ORDER 50)
    result = migrate_source(SOURCE, "f.py")
    assert [(f.code, f.line, f.name) for f in result.findings] == [("TS199", 3, "frobnicate-call")]
    assert frobnicate.runs and not any(frobnicate.runs)
    frobnicate.runs.clear()
    migrate_source(SOURCE, "f.py", options=["frobnicate_loudly"])
    assert frobnicate.runs and all(frobnicate.runs)


def test_an_added_rule_is_screened_by_its_names(frobnicate):
    result = migrate_source("import tensorflow as tf\n\ny = tf.abs(-1.0)\n", "g.py")
    assert frobnicate.runs == []  # the file spells no "frobnicate": the rule is not run
    assert not any(f.code == "TS199" for f in result.findings)


def test_an_added_rule_has_its_codes_documented_and_its_names_handled(frobnicate):
    assert REGISTRY["TS199"] is TS199
    assert "\n## TS199 frobnicate-call\n" in codes_markdown()
    assert "frobnicate" in tf1_only.handled()


def test_an_added_rule_has_its_option_on_the_command_line(frobnicate):
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    assert "--frobnicate-loudly" in parser.format_help()
    args = parser.parse_args(["x.py", "--frobnicate-loudly", "--tf-function"])
    assert command.rule_options(args) == ("tf_function", "frobnicate_loudly")
    assert command.rule_options(parser.parse_args(["x.py"])) == ()


def test_removing_the_rule_removes_what_it_declared(frobnicate):
    unregister_rule(frobnicate)
    try:
        assert frobnicate not in registry.phase("tape")
        assert "TS199" not in REGISTRY
        assert "TS199" not in codes_markdown()
        assert "frobnicate" not in tf1_only.handled()
        assert "frobnicate_loudly" not in registry.option_names()
        with pytest.raises(ValueError, match="unknown option"):
            migrate_source(SOURCE, "f.py", options=["frobnicate_loudly"])
    finally:
        register_rule(frobnicate)  # the fixture removes it again


def test_a_rule_must_declare_a_valid_id_phase_and_order():
    class Nameless(TapeshiftCodemod):
        PHASE = "tape"

    class Twice(TapeshiftCodemod):
        RULE = "session"
        PHASE = "tape"

    class Lost(TapeshiftCodemod):
        RULE = "lost"
        PHASE = "later"

    class Snake(TapeshiftCodemod):
        RULE = "snake_case"
        PHASE = "tape"

    for rule, message in ((Nameless, "kebab-case"), (Twice, "already registered"),
                          (Lost, "PHASE"), (Snake, "kebab-case")):
        with pytest.raises(ValueError, match=message):
            register_rule(rule)
    assert "lost" not in registry.ids()


def test_every_registered_rule_declares_a_phase_and_codes_it_owns():
    registry.load()
    owned = [info.code for rule in registry.rules() for info in rule.__dict__.get("CODES", ())]
    assert len(owned) == len(set(owned))  # each code has one owner
    assert all(REGISTRY[code].code == code for code in owned)
    assert {r.RULE for r in registry.rules()} == {
        "contrib", "custom_gradients", "feeds", "session", "gradients", "renames",
        "keras-optimizers", "imports", "tf1-only", "tf1-only-left", "compat", "layers",
        "model-code", "class-feeds", "class-variable-locals", "summaries", "default-graph", "savers", "towers",
        "towers-strategy", "gradient-targets", "contrib-summary", "rnn-cells"}
