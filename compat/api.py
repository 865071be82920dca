"""The public entry points: build once, call many times; or one-shot helpers."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from tapeshift.compat import backends
from tapeshift.compat.errors import CompatError, NonFiniteGradientError, TransformError
from tapeshift.compat.replicas import (
    BATCH_REDUCTIONS,
    REPLICA_CHECKS,
    REPLICA_TRANSFORMS,
    ReplicaOptions,
)
from tapeshift.compat.result import LEGACY, GradientResult, Stage
from tapeshift.compat.split import BYPASS_POLICIES, MODES, UNCONNECTED, backprop, check_upstream
from tapeshift.compat.transforms import as_transform

CHECK_NUMERICS = ("report", "raise")


class GradientFunction:
    """A model, its parameters and a gradient request, compiled per input signature.

    Call it with the model's inputs (and, for a non-scalar target, the upstream
    gradient); get a ``GradientResult`` of numpy values. Parameters start from
    the same numpy values on every backend.

    ``batch_reduction``, ``replica_transforms`` and ``replica_check`` concern the
    ``mirrored`` backend alone (the others accept and ignore them, so that one
    test runs on every backend): whether the target is a ``"mean"`` or a
    ``"sum"`` over the batch; whether a transform sees one device's stage
    gradient (``"global"``) or each replica's share (``"per_replica"``); and
    whether a target that differs from one device's raises, warns or passes
    (``tapeshift.compat.replicas``, docs/distributed.md).
    """

    def __init__(
        self,
        model: Callable,
        params: Mapping[str, Any],
        *,
        wrt: Sequence[str] | None = None,
        cuts: Sequence[str] = (),
        transforms: Mapping[str, Any] | None = None,
        mode: str = "vjp",
        bypass: str = "add",
        unconnected_gradients: str = "none",
        check_numerics: str = "report",
        backend: str = "tape",
        target_name: str = "target",
        batch_reduction: str = "mean",
        replica_transforms: str = "global",
        replica_check: str = "raise",
    ):
        _choice("mode", mode, MODES)
        _choice("batch_reduction", batch_reduction, BATCH_REDUCTIONS)
        _choice("replica_transforms", replica_transforms, REPLICA_TRANSFORMS)
        _choice("replica_check", replica_check, REPLICA_CHECKS)
        _choice("bypass", bypass, BYPASS_POLICIES)
        _choice("unconnected_gradients", unconnected_gradients, UNCONNECTED)
        _choice("check_numerics", check_numerics, CHECK_NUMERICS)
        self.backend = backend
        self._backend = backends.get(backend)
        self.model = model
        self.params = {n: np.asarray(v) for n, v in params.items()}
        if isinstance(cuts, str):
            cuts = (cuts,)
        self.cuts = tuple(cuts)
        if len(set(self.cuts)) != len(self.cuts):
            raise CompatError(f"cuts listed twice: {list(self.cuts)}")
        transforms = dict(transforms or {})
        for name in transforms:
            if name not in self.cuts:
                raise TransformError(
                    f"transform given for {name!r}, which is not one of the cuts "
                    f"{list(self.cuts)}"
                )
        self.transforms = {n: as_transform(t) for n, t in transforms.items()}
        self.wrt = None if wrt is None else ((wrt,) if isinstance(wrt, str) else tuple(wrt))
        self.mode = mode
        self.bypass = bypass
        self.unconnected_gradients = unconnected_gradients
        self.check_numerics = check_numerics
        self.target_name = target_name
        self.replica_options = ReplicaOptions(batch_reduction, replica_transforms, replica_check)
        if backend in backends.DISTRIBUTED and mode == "legacy_elementwise":
            raise CompatError(
                "mode='legacy_elementwise' reproduces an elementwise product that is not the "
                f"chain rule, and it does not distribute: backend={backend!r} refuses it. Run "
                "it on graph, tape or function")
        self._compiled: dict = {}

    # -- calling ---------------------------------------------------------
    def __call__(self, inputs: Mapping[str, Any] | None = None, upstream: Any = None):
        inputs = _arrays(inputs)
        up = None if upstream is None else np.asarray(upstream)
        compiled = self._compile(inputs, up, forward_only=False)
        fetched, plan = compiled(inputs, up)
        return self._result(fetched, plan, compiled)

    def value(self, inputs: Mapping[str, Any] | None = None) -> np.ndarray:
        """The target's value alone (a forward run, no gradient)."""
        inputs = _arrays(inputs)
        fetched, _ = self._compile(inputs, None, forward_only=True)(inputs, None)
        return fetched["target"]

    def compiled(self, inputs: Mapping[str, Any] | None = None, upstream: Any = None):
        """The backend object for this signature (for benchmarks and inspection)."""
        inputs = _arrays(inputs)
        return self._compile(inputs, None if upstream is None else np.asarray(upstream), False)

    def variable_values(self, inputs: Mapping[str, Any] | None = None, upstream: Any = None):
        """Current values of the parameter variables of the program for this signature.

        Parameters only change when model code assigns to them (batch-norm moving
        statistics, for example); gradients never do.
        """
        return self.compiled(inputs, upstream).variable_values()

    def close(self) -> None:
        for c in self._compiled.values():
            c.close()
        self._compiled.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- internals -------------------------------------------------------
    def _compile(self, inputs, upstream, forward_only):
        clash = set(inputs) & set(self.params)
        if clash:
            raise CompatError(f"names used for both a parameter and an input: {sorted(clash)}")
        wrt = self.wrt if self.wrt is not None else tuple(self.params)
        for n in wrt:
            if n not in self.params and n not in inputs:
                raise CompatError(
                    f"wrt names {n!r}, which is neither a parameter ({sorted(self.params)}) "
                    f"nor an input ({sorted(inputs)})"
                )
        specs = {n: (v.shape, v.dtype) for n, v in inputs.items()}
        up_spec = None if upstream is None else (upstream.shape, upstream.dtype)
        key = (tuple(sorted((n, s, d.str) for n, (s, d) in specs.items())),
               None if up_spec is None else (up_spec[0], up_spec[1].str), forward_only)
        if key not in self._compiled:
            program = self._forward_program() if forward_only else self._program(wrt)
            if self.backend in backends.DISTRIBUTED:
                self._compiled[key] = self._backend.compile(
                    program, self.params, specs, up_spec, probe=self._probe(forward_only),
                    options=self.replica_options, target_name=self.target_name)
            else:
                self._compiled[key] = self._backend.compile(program, self.params, specs, up_spec)
        return self._compiled[key]

    def _program(self, wrt):
        def program(tracer, variables, inputs, upstream):
            sources = {n: variables[n] if n in variables else inputs[n] for n in wrt}
            fw = tracer(self.model, variables, inputs, sources, self.cuts)
            return backprop(
                fw,
                upstream,
                transforms=self.transforms,
                mode=self.mode,
                bypass=self.bypass,
                unconnected_gradients=self.unconnected_gradients,
                target_name=self.target_name,
            )

        return program

    def _forward_program(self):
        from tapeshift.compat.split import Plan

        def program(tracer, variables, inputs, upstream):
            fw = tracer(self.model, variables, inputs, {}, ())
            return {"target": fw.target}, Plan("forward", self.target_name, ())

        return program

    def _probe(self, forward_only):
        """The forward run on one device whose shapes and target the mirrored backend reads."""
        cuts = () if forward_only else self.cuts

        def program(tracer, variables, inputs, upstream):
            fw = tracer(self.model, variables, inputs, {}, cuts)
            if not forward_only:  # a bad upstream gradient is named with one device's shapes
                check_upstream(fw.target, upstream, self.target_name)
            fetches = {"target": fw.target}
            fetches.update({f"cut/{c.name}": c.output for c in fw.cuts})
            return fetches, None

        return program

    def _result(self, fetched, plan, compiled=None) -> GradientResult:
        grads = {s: fetched.get(f"grad/{s}") for s in plan.sources}
        stages = tuple(
            Stage(
                name,
                fetched[f"stage/{name}/gradient"],
                fetched.get(f"stage/{name}/passed", fetched[f"stage/{name}/gradient"]),
                transform,
            )
            for name, transform in plan.stages
        )
        bad = [f"stage {s.name!r}" for s in stages if not _finite(s.gradient)]
        bad += [f"stage {s.name!r} after {s.transform}" for s in stages
                if s.transform and not _finite(s.passed)]
        bad += [f"gradient for {n!r}" for n, g in grads.items() if g is not None and not _finite(g)]
        if not _finite(fetched["target"]):
            bad.insert(0, f"target {plan.target_name!r}")
        if bad and self.check_numerics == "raise":
            raise NonFiniteGradientError("NaN or Inf in " + ", ".join(bad))
        notes = [b.describe() for b in plan.bypasses]
        if plan.mode == LEGACY:
            notes.insert(0, "legacy_elementwise: these numbers reproduce the elementwise "
                            "product of the legacy idiom, which is not the chain rule")
        if bad:
            notes.append("NaN or Inf in " + ", ".join(bad))
        notes += getattr(compiled, "notes", [])
        return GradientResult(
            backend=self.backend,
            mode=plan.mode,
            target_name=plan.target_name,
            target=fetched["target"],
            grads=grads,
            stages=stages,
            bypasses=tuple(plan.bypasses),
            nonfinite=tuple(bad),
            notes=tuple(notes),
            replicas=getattr(compiled, "replicas", 1),
        )


def build(model, params, **options) -> GradientFunction:
    """Compile ``model`` for repeated gradient calls; see ``GradientFunction``."""
    return GradientFunction(model, params, **options)


def gradient(model, params, inputs=None, *, upstream=None, **options) -> GradientResult:
    """Direct gradient of the model's target with respect to ``wrt`` (default: params)."""
    if options.get("cuts"):
        raise CompatError("gradient() takes no cuts; use split_gradient()")
    with GradientFunction(model, params, **options) as fn:
        return fn(inputs, upstream)


def split_gradient(model, params, inputs=None, *, cuts, upstream=None, **options):
    """Gradient split along ``cuts`` and composed by vector-Jacobian products."""
    if not cuts:
        raise CompatError("split_gradient() needs at least one cut")
    with GradientFunction(model, params, cuts=cuts, **options) as fn:
        return fn(inputs, upstream)


def vjp(model, params, inputs=None, *, wrt=None, backend: str = "tape"):
    """``(value, pullback)`` like ``jax.vjp``: ``pullback(cotangent) -> {source: grad}``.

    Each pullback runs the compiled program with that cotangent (the forward
    is recomputed from the same parameters and inputs).
    """
    fn = GradientFunction(model, params, wrt=wrt, backend=backend)
    value = fn.value(inputs)

    def pullback(cotangent):
        return dict(fn(inputs, upstream=cotangent).grads)

    return value, pullback


def _choice(what, value, allowed):
    if value not in allowed:
        raise ValueError(f"{what}={value!r}; choose one of {', '.join(map(repr, allowed))}")


def _arrays(inputs) -> dict[str, np.ndarray]:
    return {n: np.asarray(v) for n, v in (inputs or {}).items()}


def _finite(a) -> bool:
    a = np.asarray(a)
    if not np.issubdtype(a.dtype, np.inexact):
        return True
    # one pass: a sum is finite when every element is (an overflowing sum of
    # finite values is the rare case that needs the elementwise check)
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.sum(a)):
            return True
    return bool(np.isfinite(a).all())
