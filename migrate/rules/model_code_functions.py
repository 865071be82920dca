"""The model-code rule's model functions and classes: code that makes variables, read where it runs.

Part of :mod:`tapeshift.migrate.rules.model_code`: a model function is read at
its first module-level call (what it makes is made there, once, under its TF1
names; its def is rewritten to compute with it); a class whose methods make
variables has ``__init__`` and the methods only it calls read in the order
``__init__`` runs them (:mod:`tapeshift.migrate.rules.model_code_classes` holds
what the rule knows of the class). Here too: the functions that make variables
where they run and were not read (``hidden_makers``: a collection listed there
would miss their variables), and the lists of collection names that only
``collections=`` read, which go once collections are lists.
"""

from __future__ import annotations

from typing import List, Optional, Set, Tuple

import libcst as cst

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.dataflow import names_of
from tapeshift.migrate.engine.toolkit.variable_store import FunctionFacts
from tapeshift.migrate.engine.toolkit.walk import instance_test, nodes
from tapeshift.migrate.rules.contrib_slim import is_slim_call
from tapeshift.migrate.rules.model_code_classes import FunctionContext, class_context
from tapeshift.migrate.rules.model_code_syntax import construction

_is_call = instance_test(cst.Call)  # answered once per type (LibCST's classes are ABCs)


class FunctionBodies:
    """Part of :class:`tapeshift.migrate.rules.model_code.ModelCode`: model
    functions and the once-run methods of classes, read where they run (state on
    the rule: its store, the functions pending and read, the class being read)."""

    # -- model functions -----------------------------------------------------
    def _model_functions_called(self, stmt: cst.CSTNode) -> List[cst.BaseStatement]:
        """The statement calls a model function: at its first call its code is read
        (its variables and layers made here, once, under their TF1 names; its def
        rewritten in place to use them); the statements that make them come back."""
        if self._class is not None:
            return []
        outer = self._function  # (main() calling deepnn(x): deepnn's go before main's call)
        if outer is not None and not outer.driver:
            return []
        made: List[cst.BaseStatement] = []
        for n in nodes(stmt):
            if not (isinstance(n, cst.Call) and isinstance(n.func, cst.Name)):
                continue
            name = n.func.value
            if name in self._read_functions and self._store.scope.name:
                self._fail(n, f"`{name}` is called in variable scope `{self._store.scope.name}`: "
                           "its variables would be others than at its first call")
            made_before = self._facts.functions.get(name)
            if made_before is not None and any(not e.shared for e in made_before.made):
                self._fail(n, f"`{name}` is called again: TF1 makes new variables at each call "
                           "(or raises, a name taken), the code read at its first call shares "
                           "one set (AUTO_REUSE or a reuse argument would share them in TF1 too)")
            if name not in self._pending:
                continue
            if self._store.scope.name:
                self._fail(n, f"model function `{name}` first called in variable scope "
                           f"`{self._store.scope.name}` is not converted")
            out, index, fn = self._pending.pop(name)
            self._read_functions.add(name)
            ctx = FunctionContext.of(fn)
            self._function = ctx
            saved_env = self._env
            self._env = {}
            self._replayed.add(id(fn))  # (what it makes is in the store as it is read)
            store, first = self._store, self._store.next_order
            ctx.driver = name in self._drivers
            try:
                body = self._block(list(fn.body.body))
            finally:
                self._function = outer
                self._env = saved_env
            if self._store is not store:  # it reset the graph: what it made is all there is
                store, first = self._store, 0
            self._facts.functions[name] = FunctionFacts(
                [e for e in store.entries.values() if e.order >= first],
                alone=first == 0)
            body = _comments_kept(fn, body, ctx.hoisted)
            out[index] = fn.with_changes(body=fn.body.with_changes(body=body))
            for made_stmt in ctx.hoisted:
                reads = names_of(made_stmt)[0] & (ctx.params | ctx.locals)
                if reads:
                    self._fail(fn, f"model function `{name}` makes a variable or layer from "
                               f"`{sorted(reads)[0]}`, a value of the call: not converted")
            self.record_change(n, f"`{name}`'s variables and layers are made once, before its "
                               "first call; the function computes with them")
            if outer is not None:
                outer.hoisted.extend(ctx.hoisted)
            else:
                made.extend(ctx.hoisted)
        return made

    # -- classes -------------------------------------------------------------
    def _read_class(self, node: cst.ClassDef) -> cst.ClassDef:
        """A class whose ``__init__`` (and the methods only it calls) makes variables:
        read those methods in the order ``__init__`` runs them."""
        if not any(self._has_model_calls(list(fn.body.body)) for fn in node.body.body
                   if isinstance(fn, cst.FunctionDef)):
            return node
        ctx = class_context(node)
        others = [] if ctx is None else [name for name, fn in ctx.methods.items()
                                         if name not in ctx.once
                                         and self._has_model_calls(list(fn.body.body))]
        if ctx is None or others:
            where = f"`{node.name.value}.{others[0]}`" if others else f"class `{node.name.value}`"
            self._fail(node, f"model code in {where}, which may run more than once (only "
                       "`__init__` and the methods only it calls are read)")
        self._class = ctx
        store, first = self._store, self._store.next_order
        try:
            ctx.bodies["__init__"] = self._method("__init__")
        finally:
            self._class = None
        if self._store is store:  # what each object makes (its handles: `self.<attr>`)
            self._class_entries[node.name.value] = [
                e for e in store.entries.values() if e.order >= first]
        if not self._changed:
            return node
        body = [fn.with_changes(body=fn.body.with_changes(body=ctx.bodies[fn.name.value]))
                if isinstance(fn, cst.FunctionDef) and fn.name.value in ctx.bodies else fn
                for fn in node.body.body]
        # a method read at each of its calls is gone if nothing else calls it
        used = {n.attr.value for fn in body if isinstance(fn, cst.FunctionDef)
                for n in nodes(fn.body) if isinstance(n, cst.Attribute)
                and isinstance(n.value, cst.Name) and n.value.value == "self"}
        body = [fn for fn in body if not (isinstance(fn, cst.FunctionDef)
                                          and fn.name.value in ctx.inlined - used)]
        return node.with_changes(body=node.body.with_changes(body=body))

    def _note_instance(self, stmt: cst.SimpleStatementLine) -> None:
        """``agent = Agent(...)`` at module level or in a model function (``main()``),
        of a class whose ``__init__`` made variables: they are the object's, made in
        the graph of this point."""
        made = construction(stmt)
        if made is not None and self._class_entries.get(made[1]):
            self._instances.append((*made, self._store, self._function))

    def module_collection(self, original: cst.CSTNode, entries: list,
                          trainable_only: bool) -> Tuple[Optional[str], list]:
        """What a collection read outside the classes holds of ``entries`` (the store's;
        a class's are there from when the class was read, under ``self.`` handles):
        (the object whose attributes they are, or None; the entries). At module
        level or in a function, after the one ``agent = Agent(...)`` of that body:
        that object's variables, and none of the module's own beside them. Otherwise
        reported."""
        if self._class is not None:
            return None, entries
        made_by = {id(e): cls for cls, es in self._class_entries.items() for e in es}
        live = [(name, cls) for name, cls, store, fn in self._instances
                if store is self._store and fn is self._function]
        theirs = [e for e in entries if id(e) in made_by]
        if not theirs and not live:
            return None, entries
        constructed = [n for n in nodes(self._module) if isinstance(n, cst.Call)
                       and isinstance(n.func, cst.Name) and self._class_entries.get(n.func.value)]
        if len(live) != 1 or len(constructed) != 1:
            # (made in another function, by two objects, or later than this line: not followed)
            cls = made_by[id(theirs[0])] if theirs else live[0][1]
            self._fail(original, f"`{code_of(original)}`: the variables objects of `{cls}` "
                       "make where they are made are not listed here by the codemod (one "
                       "object made by a statement of the same body before this line is): "
                       "not converted")
        if any(id(e) not in made_by for e in entries):
            self._fail(original, f"`{code_of(original)}` holds the variables `{live[0][0]}` "
                       "made and others: not converted")
        name, cls = live[0]
        return name, [e for e in self._class_entries[cls] if e.trainable or not trainable_only]

    def _makes_variables(self, fn: cst.FunctionDef) -> bool:
        return any(self._is_maker_call(n) for n in nodes(fn.body) if _is_call(n))

    def _is_maker_call(self, call: cst.Call) -> bool:
        """``call`` makes a variable or a layer (tf.Variable, get_variable, tf.layers, tf-slim)."""
        api = self.tf_api_name(call.func) or ""
        return api in ("Variable", "VariableV1", "get_variable") or api.startswith("layers.") \
            or is_slim_call(self, call)

    def hidden_makers(self) -> List[str]:
        """Functions that make variables where they run, which the store does not see
        (a model function not read yet, whose every call is a statement the rule reads
        later, has not run yet)."""
        return [name for key, name in self._makers.items() if key not in self._replayed
                and not (name in self._pending and name in self._called_at_top_only)
                and not self._constructed_later(self._maker_class.get(key))]

    def _constructed_later(self, owner: Optional[str]) -> bool:
        """The methods of class ``owner`` have not run yet where the class being read
        runs: both are constructed only in top-level statements, ``owner`` first after."""
        if owner is None or self._class is None:
            return False
        current = self._class.node.name.value
        return owner != current and {owner, current} <= self._called_at_top_only \
            and self._first_call.get(owner, -1) > self._first_call.get(current, len(self._first_call))

    def _method(self, name: str) -> List[cst.BaseStatement]:
        ctx = self._class
        self._replayed.add(id(ctx.methods[name]))
        saved = (ctx.renames, self._env, self._collection_lists)
        ctx.renames, self._env, self._collection_lists = {}, {}, set()
        try:
            return self._drop_unused_lists(self._block(list(ctx.methods[name].body.body)))
        finally:
            ctx.renames, self._env, self._collection_lists = saved

    def _drop_unused_lists(self, body: List[cst.BaseStatement]) -> List[cst.BaseStatement]:
        """Lists of collection names that only ``collections=`` read (``c_names =
        ['eval_net_params', tf.GraphKeys.GLOBAL_VARIABLES]``) mean nothing in TF2
        once the collections are lists: their bindings go."""
        loads: Set[str] = set()
        for stmt in body:
            loads |= names_of(stmt)[0]
        unused = self._collection_lists - loads
        if not unused:
            return body
        out: List[cst.BaseStatement] = []
        for stmt in body:
            small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) \
                and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign) \
                and len(stmt.body[0].targets) == 1 else None
            target = small.targets[0].target if small is not None else None
            if isinstance(target, cst.Name) and target.value in unused:
                self.record_change(stmt, f"`{target.value}`, the collections of "
                                   "get_variable(collections=...), removed")
                continue
            if isinstance(target, cst.Tuple) and isinstance(small.value, cst.Tuple) \
                    and len(target.elements) == len(small.value.elements):
                pairs = [(t, v) for t, v in zip(target.elements, small.value.elements)
                         if not (isinstance(t.value, cst.Name) and t.value.value in unused)]
                if len(pairs) < len(target.elements):
                    self.record_change(stmt, "the collections of get_variable(collections=...) "
                                       "removed from the assignment")
                    stmt = _without_pairs(stmt, small, pairs)
            out.append(stmt)
        return out


def _without_pairs(stmt: cst.SimpleStatementLine, small: cst.Assign, pairs) -> cst.SimpleStatementLine:
    """``a, b, c = x, y, z`` keeping ``pairs`` of (target, value) elements."""
    if not pairs:
        return stmt.with_changes(body=[cst.Pass()])
    last = len(pairs) - 1
    if len(pairs) == 1:
        target, value = pairs[0][0].value, pairs[0][1].value
    else:
        target = small.targets[0].target.with_changes(elements=[
            t.with_changes(comma=cst.MaybeSentinel.DEFAULT) if k == last else t
            for k, (t, _) in enumerate(pairs)])
        value = small.value.with_changes(elements=[
            v.with_changes(comma=cst.MaybeSentinel.DEFAULT) if k == last else v
            for k, (_, v) in enumerate(pairs)])
    return stmt.with_changes(body=[small.with_changes(
        targets=[small.targets[0].with_changes(target=target)], value=value)])


def _comments_kept(fn: cst.FunctionDef, body: List[cst.BaseStatement],
                   hoisted: List[cst.BaseStatement]) -> List[cst.BaseStatement]:
    """The comments heading a model function's body, which say what it does, stay
    there when its first statement is made at module level instead (they went with
    it)."""
    first = fn.body.body[0] if fn.body.body else None
    said = [ln for ln in getattr(first, "leading_lines", ()) if ln.comment is not None]
    if not said or not body or not hoisted or body[0] is first:
        return body
    lines = list(hoisted[0].leading_lines)
    texts = [ln.comment.value for ln in said]
    if [ln.comment.value for ln in lines if ln.comment is not None][:len(said)] != texts:
        return body
    hoisted[0] = hoisted[0].with_changes(leading_lines=[
        ln for ln in lines if ln.comment is None or ln.comment.value not in texts])
    return [body[0].with_changes(leading_lines=[*said, *body[0].leading_lines]), *body[1:]]
