"""``tf.compat.v1.train.*Optimizer`` -> ``tf.keras.optimizers.*`` (opt-in).

By default tape form keeps the v1 optimizers: they run eagerly and keep every
number (docs/tf1-vs-tf2.md, section 6). With ``tapeshift migrate --keras-optimizers`` this
rule maps them to Keras, with TF1's defaults passed explicitly where Keras'
differ, and reports (TS119) every place where the Keras update is not the same
computation. Measured on TensorFlow 2.21 / Keras 3.15, 30 steps of a linear
least-squares fit at learning rate 0.05 (Adadelta 1.0), TF1 vs Keras with the
arguments below; tests/migrate/rules/test_keras_optimizers.py measures every verdict:

==========================  ========================  =============================
TF1                         Keras                     numbers (max relative diff)
==========================  ========================  =============================
GradientDescentOptimizer    SGD                       identical
MomentumOptimizer           SGD(momentum=...)         rounding (3e-7); a changing
                                                      learning rate changes the
                                                      rule (TS119)
AdamOptimizer               Adam(epsilon=1e-08)       rounding (2e-5): TF1 keeps
                                                      beta^t as a running product
AdagradOptimizer            Adagrad(epsilon=0.0)      identical
AdadeltaOptimizer           Adadelta(epsilon=1e-08)   rounding (1e-8)
FtrlOptimizer               Ftrl                      identical
RMSPropOptimizer            RMSprop(rho=, epsilon=)   a different rule (0.2): TF1
                                                      starts the mean square at 1
                                                      and adds epsilon inside the
                                                      square root (TS119)
==========================  ========================  =============================

An optimizer is mapped only when it is bound to a name whose every other use
is ``name.apply_gradients(...)`` (Keras optimizers have no
``compute_gradients``, ``minimize`` of a tensor, ``get_slot``...);
``apply_gradients(..., global_step=gs)`` becomes ``apply_gradients(...)``
followed by ``gs.assign_add(1)``, which is what TF1's did after the update.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import libcst as cst

from tapeshift.migrate.engine.registry import RuleOption, register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.tf_names import tf_module_alias
from tapeshift.migrate.engine.toolkit.walk import children, release
from tapeshift.migrate.engine.findings import CodeInfo, Severity

# Codes this rule reports (docs/codes.md is generated from them)

TS119 = CodeInfo(
    code="TS119",
    name="keras-optimizer-numbers",
    severity=Severity.WARNING,
    blocks_tape=False,
    summary="with --keras-optimizers: a Keras optimizer that does not compute TF1's update "
            "bit for bit, or a v1 optimizer that stays",
    what="Reports each optimizer `--keras-optimizers` maps to Keras whose update differs "
         "from TF1's (RMSProp's rule, Momentum with a changing learning rate, float "
         "rounding of Adam, Momentum, Adadelta), and each it leaves as "
         "`tf.compat.v1.train` because it is used other than through `apply_gradients`.",
    why="The v1 optimizers run eagerly and keep every number (docs/tf1-vs-tf2.md, section 6); "
        "Keras' implementations are not always the same computation, so a "
        "migration that moves to them must say where the numbers move.",
    example="opt = tf.train.RMSPropOptimizer(0.01)",
    use_instead="opt = tf.compat.v1.train.RMSPropOptimizer(0.01)  # the default: same numbers",
    fix_safety="The mapping is opt-in; without `--keras-optimizers` nothing changes.",
)


#: the option that turns this rule on (in the shared scratch of one migration)
OPTION = "keras_optimizers"


@dataclass(frozen=True)
class Mapping:
    keras: str
    #: TF1 parameters in positional order -> Keras keyword (None: dropped)
    params: Tuple[Tuple[str, Optional[str]], ...]
    #: Keras arguments always passed (TF1's defaults where Keras' differ)
    fixed: Tuple[Tuple[str, str], ...] = ()
    #: TF1 defaults to pass when the call leaves them out: (TF1 name, value)
    defaults: Tuple[Tuple[str, str], ...] = ()
    #: None: identical; "rounding": same rule, float32 rounding differs;
    #: otherwise the reason the numbers change
    numbers: Optional[str] = None


_COMMON = (("use_locking", None), ("name", "name"))
MAPPINGS: Dict[str, Mapping] = {
    "GradientDescentOptimizer": Mapping(
        "SGD", (("learning_rate", "learning_rate"), *_COMMON)),
    "MomentumOptimizer": Mapping(
        "SGD", (("learning_rate", "learning_rate"), ("momentum", "momentum"),
                *_COMMON, ("use_nesterov", "nesterov")),
        numbers="rounding"),
    "AdamOptimizer": Mapping(
        "Adam", (("learning_rate", "learning_rate"), ("beta1", "beta_1"), ("beta2", "beta_2"),
                 ("epsilon", "epsilon"), *_COMMON),
        defaults=(("learning_rate", "0.001"), ("epsilon", "1e-08")), numbers="rounding"),
    "AdagradOptimizer": Mapping(
        "Adagrad", (("learning_rate", "learning_rate"),
                    ("initial_accumulator_value", "initial_accumulator_value"), *_COMMON),
        fixed=(("epsilon", "0.0"),)),
    "AdadeltaOptimizer": Mapping(
        "Adadelta", (("learning_rate", "learning_rate"), ("rho", "rho"), ("epsilon", "epsilon"),
                     *_COMMON),
        defaults=(("learning_rate", "0.001"), ("epsilon", "1e-08")), numbers="rounding"),
    "FtrlOptimizer": Mapping(
        "Ftrl", (("learning_rate", "learning_rate"), ("learning_rate_power", "learning_rate_power"),
                 ("initial_accumulator_value", "initial_accumulator_value"),
                 ("l1_regularization_strength", "l1_regularization_strength"),
                 ("l2_regularization_strength", "l2_regularization_strength"), *_COMMON,
                 ("accum_name", None), ("linear_name", None),
                 ("l2_shrinkage_regularization_strength", "l2_shrinkage_regularization_strength"),
                 ("beta", "beta"))),
    "RMSPropOptimizer": Mapping(
        "RMSprop", (("learning_rate", "learning_rate"), ("decay", "rho"), ("momentum", "momentum"),
                    ("epsilon", "epsilon"), *_COMMON, ("centered", "centered")),
        defaults=(("decay", "0.9"), ("epsilon", "1e-10")),
        numbers="TF1's RMSProp starts the mean square at 1.0 and adds epsilon inside the "
                "square root; Keras starts at 0 and adds it outside"),
}
_MOMENTUM_SCHEDULE = ("TF1's Momentum accumulates gradients and scales by the current "
                      "learning rate; Keras' SGD accumulates learning-rate-scaled steps: "
                      "with a changing learning rate the updates differ")


def _number(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float))


@register_rule
class V1OptimizersToKeras(TapeshiftCodemod):
    DESCRIPTION = "Map tf.compat.v1.train optimizers to Keras optimizers (opt-in), reporting number changes."
    RULE = "keras-optimizers"
    PHASE = "tape"
    ORDER = 40
    CODES = (TS119,)
    #: train.<kind> optimizers it maps (when the option is on)
    SCREEN_NAMES = frozenset(MAPPINGS)
    OPTION = RuleOption(OPTION, "--keras-optimizers",  # the module's OPTION: the name
                        "map tf.compat.v1.train optimizers to tf.keras.optimizers and "
                        "report each place that changes numbers (TS119); by default "
                        "the v1 optimizers are kept: they keep every number")

    def __init__(self, context) -> None:
        super().__init__(context)
        self._calls: Dict[cst.Call, Tuple[str, Mapping]] = {}
        self._steps: Dict[cst.Call, cst.BaseExpression] = {}  # apply_gradients -> global step
        self._alias = "tf"

    def visit_Module(self, node: cst.Module) -> bool:
        if not self.shared.get(OPTION):
            return False
        self._alias = tf_module_alias(node) or "tf"
        bound: Dict[str, Tuple[cst.Call, str]] = {}
        uses: Dict[str, List[Tuple[cst.CSTNode, List[cst.CSTNode]]]] = {}
        owner = self

        def walk(n: cst.CSTNode, stack: List[cst.CSTNode]) -> None:
            if isinstance(n, cst.Assign) and len(n.targets) == 1 \
                    and isinstance(n.targets[0].target, cst.Name) \
                    and isinstance(n.value, cst.Call):
                api = owner.tf_api_name(n.value.func) or ""
                kind = api[len("train."):] if api.startswith("train.") else ""
                if kind in MAPPINGS:
                    name = n.targets[0].target.value
                    if name in bound:
                        bound[name] = (None, "")  # bound twice: not followed
                    else:
                        bound[name] = (n.value, kind)
            if isinstance(n, cst.Name) and stack and not isinstance(stack[-1], cst.AssignTarget):
                uses.setdefault(n.value, []).append((n, list(stack)))
            stack.append(n)
            for child in children(n):
                walk(child, stack)
            stack.pop()

        try:
            walk(node, [])
        finally:
            release(walk)
        for name, (call, kind) in bound.items():
            if call is None:
                continue
            steps: Dict[cst.Call, cst.BaseExpression] = {}
            ok = True
            for use, stack in uses.get(name, []):
                parent = stack[-1] if stack else None
                grand = stack[-2] if len(stack) > 1 else None
                if isinstance(parent, cst.Attribute) and parent.value is use \
                        and parent.attr.value == "apply_gradients" \
                        and isinstance(grand, cst.Call) and grand.func is parent:
                    step = self._global_step(grand, stack)
                    if step is False:
                        ok = False
                        break
                    if step is not None:
                        steps[grand] = step
                    continue
                what = code_of(parent) if isinstance(parent, cst.Attribute) else name
                self.report(TS119.code, use, f"`{what}`: only optimizers used solely through "
                            "apply_gradients are mapped to Keras; this one stays "
                            f"tf.compat.v1.train.{kind}", changes_numbers=False)
                ok = False
                break
            if ok:
                self._calls[call] = (kind, MAPPINGS[kind])
                self._steps.update(steps)
        return True

    def _global_step(self, call: cst.Call, stack: List[cst.CSTNode]):
        """The global_step argument of apply_gradients (None if absent); False
        (reported) when the call is not a statement the step can follow."""
        step = None
        for k, arg in enumerate(call.args):
            key = arg.keyword.value if arg.keyword is not None else (
                ("grads_and_vars", "global_step", "name")[k] if k < 3 else None)
            if key == "global_step":
                step = arg.value
        if step is None:
            return None
        statement = next((s for s in reversed(stack) if isinstance(s, cst.SimpleStatementLine)),
                         None)
        parent = stack[-3] if len(stack) > 2 else None
        if statement is None or len(statement.body) != 1 or not (
                isinstance(parent, cst.Expr) or isinstance(parent, cst.Assign)
                and parent.value is call):
            self.report(TS119.code, call, "apply_gradients(global_step=...) inside an expression: "
                        "the optimizer stays tf.compat.v1")
            return False
        return step

    # ------------------------------------------------------------------
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        if original_node in self._calls:
            return self._keras(original_node, updated_node, *self._calls[original_node])
        if original_node in self._steps:
            args = [a for k, a in enumerate(updated_node.args)
                    if not (a.keyword is not None and a.keyword.value == "global_step"
                            or a.keyword is None and k == 1)]
            if args:
                args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated_node.with_changes(args=args)
        return updated_node

    def _keras(self, original: cst.Call, call: cst.Call, kind: str, mapping: Mapping) -> cst.Call:
        names = [p for p, _ in mapping.params]
        given: Dict[str, cst.BaseExpression] = {}
        for k, arg in enumerate(call.args):
            key = arg.keyword.value if arg.keyword is not None else (
                names[k] if k < len(names) else None)
            given[key] = arg.value
        args: List[cst.Arg] = []
        for tf1, keras in mapping.params:
            if tf1 in given and keras is not None:
                args.append(cst.Arg(given[tf1], keyword=cst.Name(keras),
                                    equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                          cst.SimpleWhitespace(""))))
            elif tf1 not in given and keras is not None and tf1 in dict(mapping.defaults):
                args.append(cst.Arg(cst.parse_expression(dict(mapping.defaults)[tf1]),
                                    keyword=cst.Name(keras),
                                    equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                          cst.SimpleWhitespace(""))))
        for keras, value in mapping.fixed:
            args.append(cst.Arg(cst.parse_expression(value), keyword=cst.Name(keras),
                                equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                      cst.SimpleWhitespace(""))))
        if args and args[0].keyword is not None and args[0].keyword.value == "learning_rate":
            args[0] = args[0].with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)
        numbers = mapping.numbers
        lr = given.get("learning_rate")
        if kind == "MomentumOptimizer" and lr is not None and not _number(lr):
            numbers = _MOMENTUM_SCHEDULE
        new = cst.Call(func=cst.parse_expression(f"{self._alias}.keras.optimizers.{mapping.keras}"),
                       args=args)
        self.record_change(original, f"train.{kind} -> keras.optimizers.{mapping.keras}")
        if numbers == "rounding":
            self.report(TS119.code, original, f"keras.optimizers.{mapping.keras} computes TF1's "
                        f"{kind} update with different float rounding (measured: 1e-8 to 2e-5 "
                        "relative after 30 steps, not bit for bit)", changes_numbers=True)
        elif numbers:
            self.report(TS119.code, original, f"keras.optimizers.{mapping.keras} changes the "
                        f"numbers: {numbers}", changes_numbers=True)
        return new

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if not self._steps:
            return updated_node
        small = original_node.body[0] if len(original_node.body) == 1 else None
        call = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
        if call not in self._steps:
            return updated_node
        step = self._steps[call]
        self.record_change(call, f"global_step={code_of(step)} -> {code_of(step)}.assign_add(1) "
                           "after the update (Keras' apply_gradients has no global step)")
        increment = cst.SimpleStatementLine([cst.Expr(cst.Call(
            func=cst.Attribute(value=step, attr=cst.Name("assign_add")),
            args=[cst.Arg(cst.Integer("1"))]))])
        return cst.FlattenSentinel([updated_node, increment])
