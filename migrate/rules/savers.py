"""``tf.train.Saver`` -> the v1 Saver, run eagerly on the variables it lists; the session goes.

A TF1 program saves and restores its variables by name: ``saver =
tf.train.Saver()`` lists the global variables that exist at that line,
``saver.save(sess, path, global_step=step)`` writes ``path-<step>.index`` and
``.data`` (and a ``checkpoint`` file naming the latest), ``saver.restore(sess,
path)`` reads them back into the variables of those names. Measured on
TensorFlow 2.21 (docs/checkpoints.md): ``tf.compat.v1.train.Saver`` runs
eagerly when it is given its variables (``var_list``), reads and writes the
same name-based checkpoints (TF1's restore the migrated program's, and the
other way round, value for value), takes ``None`` for the session, and keeps
``max_to_keep`` and the ``checkpoint`` file as TF1's does; the variables the
migration makes keep their TF1 names (``tf.Variable(..., name="scope/w")``,
tf-keras layers named ``"scope/dense"``), and so do the v1 optimizers' slots.
So this rule, after the model-code rule has written TF1's default list out
(``var_list=[w, *dense.variables, global_step]``, what GLOBAL_VARIABLES held
at that line):

* ``tf.train.Saver(var_list=...)`` -> ``tf.compat.v1.train.Saver(var_list=...)``,
  its other arguments kept;
* ``saver.save(sess, path, ...)`` / ``saver.restore(sess, path)`` -> the
  same calls with ``None`` for the session the session rule removes;
* ``tf.train.latest_checkpoint`` and ``get_checkpoint_state`` are TF2 names
  that read TF1's ``checkpoint`` file: they stay.

What an eager Saver made at the TF1 line cannot hold: the slots of a v1
optimizer (Adam's ``w/Adam``, ``beta1_power`` ...), which it makes at its
first step, after that line. A Saver that only saves writes checkpoints
without them (TS127, a note the model-code rule makes where it writes the list:
the legacy program restores them for prediction, not to resume training); one that restores them is not converted
(TS128), nor is a Saver the rule cannot follow: in a class, passed around,
given a session this file does not open, ``defer_build``, a ``saver_def``,
or a default list that would hold what a function imported from another
module makes (each file is migrated on its own).
"""

from __future__ import annotations

import sys
from typing import Dict, List, Set, Tuple

import libcst as cst

from tapeshift.migrate.engine.findings import COMPAT_SAFETY, CodeInfo, Severity
from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.tf1_api import SESSIONS
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.dataflow import names_of
from tapeshift.migrate.engine.toolkit.kinds import KindMixin
from tapeshift.migrate.engine.toolkit.tf_names import tf_module_alias
from tapeshift.migrate.engine.toolkit.variable_store import MODEL_CODE
from tapeshift.migrate.engine.toolkit.walk import children, nodes_of, release, visit
from tapeshift.migrate.rules.model_code_calls import SAVER, bind, is_false, is_none

# Codes this rule reports (docs/codes.md is generated from them)

TS127 = CodeInfo(
    code="TS127",
    name="saver-without-optimizer-state",
    severity=Severity.INFO,
    summary="the migrated Saver saves the model's variables, not the optimizer's slots",
    what="Notes a `tf.train.Saver()` (or `Saver(tf.global_variables())`) made after an "
         "optimizer step of an optimizer with slot variables (Adam, Momentum, RMSProp, "
         "Adagrad ...): TF1's list held its slots (`w/Adam`, `w/Adam_1`) and state "
         "(`beta1_power`); the migrated Saver, made at the same line, lists the model's "
         "variables and the global step.",
    why="Eagerly, a `tf.compat.v1.train` optimizer makes its slots at its first "
        "`apply_gradients`, after the line where TF1 made the Saver, and an eager Saver "
        "is given its variables when it is made (docs/checkpoints.md). The checkpoints "
        "hold every model variable under its TF1 name, so the legacy program restores "
        "them to predict; it cannot resume training from them (its Saver asks for the "
        "slots too).",
    example="train = tf.train.AdamOptimizer(1e-3).minimize(loss)\nsaver = tf.train.Saver()",
    use_instead="To checkpoint the optimizer too, after migrating: "
                "`tf.train.Checkpoint(optimizer=optimizer, ...)`, or list "
                "`optimizer.variables()` in a Saver made after the first step.",
    fix_safety="Keeps numbers: the program computes the same; its checkpoints hold fewer "
               "entries than TF1's (no optimizer slots).",
)

TS128 = CodeInfo(
    code="TS128",
    name="saver-not-converted",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="a tf.train.Saver the codemod cannot move to eager code",
    what="Reports a `tf.train.Saver` the rule does not convert: made in a class or other "
         "than as `name = tf.train.Saver(...)`, used other than through `.save(sess, ...)` "
         "/ `.restore(sess, ...)` (passed, returned, `export_meta_graph`), given a session "
         "this file does not open, `defer_build=True`, `saver_def=`/`builder=`, a restore "
         "whose TF1 list held optimizer slots, or a default list that would hold what a "
         "function imported from another module makes.",
    why="The eager Saver saves and restores exactly the variables it is given when it is "
        "made, and finds them by name. The migration must know that list at that line, "
        "and every variable in it must exist there: an optimizer's slots do not exist "
        "before its first step, and a function in another file is not read (each file "
        "is migrated on its own).",
    example="saver = tf.train.Saver()\nsaver.restore(sess, ckpt)   # after an Adam step was "
            "built: restores w/Adam",
    use_instead="saver = tf.train.Saver(var_list=tf.trainable_variables())  # or the model's "
                "variables: restored before training resumes with fresh slots",
    fix_safety=COMPAT_SAFETY,
)

#: Saver methods converted (the session argument goes), and reads that need nothing
_METHODS = {"save": ("sess", "save_path", "global_step", "latest_filename", "meta_graph_suffix",
                     "write_meta_graph", "write_state", "strip_default_attrs", "save_debug_info"),
            "restore": ("sess", "save_path")}
_READS = frozenset({"last_checkpoints"})
#: modules whose functions make no variables of a program's own (a call on a tensor
#: computes; tf-slim's and tf-keras' layers are read by the model-code rule)
_NO_MAKERS = frozenset({"tensorflow", "numpy", "tf_slim", "tf_keras", *sys.stdlib_module_names,
                        # libraries that do not use TensorFlow (plots, data, environments)
                        "matplotlib", "mpl_toolkits", "seaborn", "pandas", "scipy", "sklearn",
                        "PIL", "cv2", "skimage", "imageio", "h5py", "tqdm", "gym"})


class _Skip(Exception):
    """Not converted; the reason was reported."""


def _scopes(module: cst.Module) -> Dict[int, cst.CSTNode]:
    """Every node -> the function (or module) whose names it reads (lambdas and
    comprehensions are part of it; classes are scopes of their own)."""
    owner: Dict[int, cst.CSTNode] = {}

    def walk(n: cst.CSTNode, scope: cst.CSTNode) -> None:
        owner[id(n)] = scope
        inner = n if isinstance(n, (cst.FunctionDef, cst.ClassDef)) else scope
        for child in children(n):
            walk(child, inner if child is getattr(n, "body", None) else scope)

    try:
        walk(module, module)
    finally:
        release(walk)
    return owner


@register_rule
class SaversToEager(KindMixin, TapeshiftCodemod):
    DESCRIPTION = "tf.train.Saver -> the v1 Saver run eagerly on its listed variables; sess -> None."
    RULE = "savers"
    #: after the model-code rule (which writes TF1's default list out), before the
    #: feeds and session rules (which would block on the session it is given)
    PHASE = "pre"
    ORDER = 28
    CODES = (TS127, TS128)
    SCREEN_NAMES = frozenset({"Saver"})
    HANDLES = frozenset({"train.Saver"})

    def __init__(self, context) -> None:
        super().__init__(context)
        self._replace: Dict[int, cst.BaseExpression] = {}  # id(original node) -> new node

    def visit_Module(self, node: cst.Module) -> bool:
        self._alias = tf_module_alias(node)
        try:
            self._plan(node)
        except _Skip:
            self._replace = {}
        return bool(self._replace)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        new = self._replace.get(id(original_node.func))
        if new is not None:
            updated_node = updated_node.with_changes(func=new)
        if any(id(a) in self._replace for a in original_node.args):
            updated_node = updated_node.with_changes(args=[
                a.with_changes(value=self._replace[id(o)]) if id(o) in self._replace else a
                for a, o in zip(updated_node.args, original_node.args)])
        return updated_node

    def _fail(self, node: cst.CSTNode, message: str) -> None:
        self.report(TS128.code, node, message)
        raise _Skip()

    # ------------------------------------------------------------------
    def _plan(self, module: cst.Module) -> None:
        calls: List[Tuple[cst.Call, List[cst.CSTNode]]] = []
        names: List[Tuple[cst.Name, List[cst.CSTNode]]] = []

        def walk(n: cst.CSTNode, stack: List[cst.CSTNode]) -> None:
            if isinstance(n, cst.Call) and self.tf_api_name(n.func) == "train.Saver":
                calls.append((n, list(stack)))
            elif isinstance(n, cst.Name):
                names.append((n, list(stack)))
            stack.append(n)
            for child in children(n):
                walk(child, stack)
            stack.pop()

        try:
            walk(module, [])
        finally:
            release(walk)
        if not calls:
            return
        if self._alias is None:
            self._fail(calls[0][0], "tf.train.Saver is converted only in files that "
                       "`import tensorflow as <name>`")
        self._owner = _scopes(module)
        self._sessions = self._session_names(module)
        facts = self.shared.get(MODEL_CODE)
        for call, stack in calls:
            target, scope = self._binding(call, stack)
            self._check_arguments(call)
            key = f"{scope.name.value if isinstance(scope, cst.FunctionDef) else ''}:{target}"
            omitted = facts.savers.get(key) if facts is not None else None
            if omitted is not None:
                self._imported_makers(module, call)
            restores = self._uses(call, target, scope, names)
            if omitted and restores:
                self._fail(restores[0], f"`{code_of(restores[0].func)}(...)`: TF1's Saver "
                           f"(line {self.position(call)[0]}) also restores the slots of "
                           f"{', '.join(dict.fromkeys(omitted))}, which eager code makes at "
                           "its first step, after this restore: not converted (list the "
                           "model's variables: `tf.train.Saver(tf.trainable_variables())`)")
            self._replace[id(call.func)] = cst.parse_expression(
                f"{self._alias}.compat.v1.train.Saver")
            self.record_change(call, "tf.train.Saver -> tf.compat.v1.train.Saver with its "
                               "var_list: runs eagerly, same name-based checkpoints")

    def _binding(self, call: cst.Call, stack: List[cst.CSTNode]) -> Tuple[str, cst.CSTNode]:
        """(name, scope) of ``name = tf.train.Saver(...)``."""
        parent = stack[-1] if stack else None
        scope = self._owner.get(id(call))
        if isinstance(scope, cst.ClassDef) or any(isinstance(n, cst.ClassDef) for n in stack):
            self._fail(call, "a tf.train.Saver in a class is not converted")
        if not (isinstance(parent, cst.Assign) and parent.value is call
                and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name)):
            self._fail(call, f"`{code_of(call)}`: a Saver is converted when it is bound to a "
                       "name (`saver = tf.train.Saver(...)`)")
        if any(isinstance(n, (cst.Lambda, cst.ListComp, cst.GeneratorExp)) for n in stack):
            self._fail(call, "a tf.train.Saver made in an expression is not converted")
        return parent.targets[0].target.value, scope

    def _check_arguments(self, call: cst.Call) -> None:
        args = bind(call, SAVER)
        if any(a.star for a in call.args):
            self._fail(call, "`tf.train.Saver(*args)` is not converted")
        if "var_list" not in args or is_none(args["var_list"]):
            self._fail(call, "tf.train.Saver() without var_list: the codemod could not list "
                       "TF1's global variables at this line")
        for key in ("saver_def", "builder"):
            if key in args and not is_none(args[key]):
                self._fail(call, f"tf.train.Saver({key}=...) is not converted")
        if "defer_build" in args and not is_false(args["defer_build"]):
            self._fail(call, "tf.train.Saver(defer_build=...): build() raises under eager "
                       "execution")

    def _session_names(self, module: cst.Module) -> Dict[int, Set[str]]:
        """scope -> the names bound to a Session in it (``with tf.Session() as
        sess``, ``sess = tf.Session(...)``)."""
        out: Dict[int, Set[str]] = {}
        for node in nodes_of(module, (cst.WithItem, cst.Assign)):
            if isinstance(node, cst.WithItem):
                if isinstance(node.item, cst.Call) and self.tf_api_name(node.item.func) in SESSIONS \
                        and node.asname is not None and isinstance(node.asname.name, cst.Name):
                    scope = self._owner.get(id(node))
                    out.setdefault(id(scope), set()).add(node.asname.name.value)
            elif isinstance(node.value, cst.Call) and self.tf_api_name(node.value.func) in SESSIONS \
                    and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                scope = self._owner.get(id(node))
                out.setdefault(id(scope), set()).add(node.targets[0].target.value)
        return out

    def _uses(self, call: cst.Call, target: str, scope: cst.CSTNode,
              names: List[Tuple[cst.Name, List[cst.CSTNode]]]) -> List[cst.Call]:
        """Check every use of the saver ``target`` of ``scope`` and plan its session
        argument's removal; the restore calls come back."""
        restores: List[cst.Call] = []
        for name, stack in names:
            where = self._owner.get(id(name))
            if name.value != target or not self._sees(where, scope, target):
                continue
            sessions = self._sessions.get(id(where), set())
            parent = stack[-1] if stack else None
            if isinstance(parent, cst.AssignTarget):
                if parent.target is name and isinstance(stack[-2], cst.Assign) \
                        and stack[-2].value is call:
                    continue  # the binding itself
                self._fail(name, f"`{target}` is bound again: not converted")
            if not (isinstance(parent, cst.Attribute) and parent.value is name):
                self._fail(name, f"the Saver `{target}` is used in a way the codemod cannot "
                           "follow (passed, stored or returned)")
            attr = parent.attr.value
            if attr in _READS:
                continue
            grand = stack[-2] if len(stack) > 1 else None
            if attr not in _METHODS or not (isinstance(grand, cst.Call) and grand.func is parent):
                self._fail(name, f"`{target}.{attr}` has no eager counterpart the codemod "
                           "writes (save and restore are converted)")
            self._session_argument(grand, attr, sessions)
            if attr == "restore":
                restores.append(grand)
        return restores

    def _sees(self, where: cst.CSTNode, scope: cst.CSTNode, target: str) -> bool:
        """A name ``target`` read in the scope ``where`` is the one bound in ``scope``:
        the same scope, or a function inside it that does not bind the name itself."""
        while where is not scope:
            if not isinstance(where, cst.FunctionDef):
                return False
            params = {p.name.value for p in (*where.params.params, *where.params.posonly_params,
                                             *where.params.kwonly_params)}
            if target in params | names_of(where.body)[1]:
                return False
            where = self._owner.get(id(where))
        return True

    def _session_argument(self, call: cst.Call, method: str, sessions: Set[str]) -> None:
        args = bind(call, _METHODS[method])
        sess = args.get("sess")
        if sess is None or is_none(sess):
            return  # eager code already
        if not (isinstance(sess, cst.Name) and sess.value in sessions):
            self._fail(call, f"`{code_of(call.func)}({code_of(sess)}, ...)`: the session is not "
                       "one this file opens where the Saver is used")
        arg = next(a for a in call.args if a.value is sess)
        self._replace[id(arg)] = cst.Name("None")
        how = "; no .meta file (eager code has no graph)" if method == "save" and not (
            "write_meta_graph" in args and is_false(args["write_meta_graph"])) else ""
        self.record_change(call, f"`{code_of(call.func)}({sess.value}, ...)` -> "
                           f"`{code_of(call.func)}(None, ...)`: the eager Saver needs no "
                           f"session{how}")

    def _imported_makers(self, module: cst.Module, saver: cst.Call) -> None:
        """TF1's default list holds what every function called before made: one
        imported from another module of the program is not read (each file is
        migrated on its own), so the list written out could miss its variables."""
        imported = _imported_names(module)
        if not imported:
            return
        kinds, _ = self.infer_kinds(module)
        line = self.position(saver)[0]
        for n in _calls(module):
            root = n.func
            while isinstance(root, cst.Attribute):
                root = root.value
            if not (isinstance(root, cst.Name) and root.value in imported) \
                    or self.position(n)[0] >= line:
                continue
            if any(isinstance(a.value, cst.Name) and kinds.get(a.value.value) in (
                    "tensor", "variable", "list") for a in n.args):
                self._fail(n, f"`{code_of(n.func)}` (imported from `{imported[root.value]}`) is "
                           f"called on TensorFlow values before the Saver on line {line}: "
                           "TF1's list holds the variables it makes, and the codemod reads one "
                           "file at a time, not the modules it imports")


def _imported_names(module: cst.Module) -> Dict[str, str]:
    """Names bound by the module's imports of other modules than TensorFlow, numpy
    and Python's own (which make no variables) -> the module."""
    out: Dict[str, str] = {}
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    name = code_of(alias.name)
                    bound = code_of(alias.asname.name) if alias.asname else name.split(".")[0]
                    out[bound] = name
            elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                where = "." * len(small.relative) + (code_of(small.module) if small.module else "")
                for alias in small.names:
                    bound = code_of(alias.asname.name) if alias.asname else code_of(alias.name)
                    out[bound] = where
    return {bound: where for bound, where in out.items()
            if where.lstrip(".").split(".")[0] not in _NO_MAKERS or where.startswith(".")}


def _calls(module: cst.Module) -> List[cst.Call]:
    found: List[cst.Call] = []

    class _V(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            found.append(n)

    visit(module, _V())
    return found
