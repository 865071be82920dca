"""Graph-building helpers that call tf.gradients on what their caller built: the helper
takes the caller's tape (engine/toolkit/gradient_helpers.py, the gradients rule)."""

from pathlib import Path

import libcst as cst
import pytest
from libcst.codemod import CodemodTest

from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.gradient_helpers import gradient_helpers
from tapeshift.migrate.rules.gradients import GradientsToTape

TRPO = Path(__file__).resolve().parents[1] / "data" / "program_structure" / "trpo_cg.py"


def _helpers(source: str) -> dict:
    module = cst.parse_module(source)
    found = gradient_helpers(module, lambda c: code_of(c.func) == "tf.gradients")
    return {name: (h.ys, h.xs) for name, h in found.items()}


def test_a_helper_differentiates_two_of_its_parameters():
    assert _helpers(
        "def flat_grad(f, params):\n"
        "    return tf.concat([tf.reshape(g, [-1]) for g in tf.gradients(f, params)], 0)\n"
        "g = flat_grad(loss, [w])\n") == {"flat_grad": (("f", 0), ("params", 1))}
    # keyword operands, and calls that pass them by keyword
    assert _helpers(
        "def hvp(params, scale, f):\n"
        "    return tf.gradients(xs=params, ys=f)\n"
        "h = hvp(f=loss, params=[w], scale=2)\n") == {"hvp": (("f", 2), ("params", 0))}


@pytest.mark.parametrize("source", [
    # two tf.gradients calls
    "def g2(f, p):\n    return tf.gradients(f, p) + tf.gradients(f, p)\ng2(l, [w])\n",
    # an operand that is not a parameter, or rebound first
    "def g(f, p):\n    return tf.gradients(loss, p)\ng(l, [w])\n",
    "def g(f, p):\n    f = f * 2\n    return tf.gradients(f, p)\ng(l, [w])\n",
    # the helper used as a value, or a call that does not pass both operands
    "def g(f, p):\n    return tf.gradients(f, p)\nh = g\ng(l, [w])\n",
    "def g(f, p):\n    return tf.gradients(f, p)\ng(*args)\n",
    # never called, or already taking a tape
    "def g(f, p):\n    return tf.gradients(f, p)\n",
    "def g(f, p, tape):\n    return tf.gradients(f, p)\ng(l, [w], t)\n",
])
def test_what_is_not_a_helper(source):
    assert _helpers(source) == {}


class TestHelperCallSites(CodemodTest):
    TRANSFORM = GradientsToTape

    def test_the_helper_takes_the_tape_of_each_caller(self) -> None:
        before = """
            import tensorflow as tf

            def flat_grad(f, params):
                return tf.concat([tf.reshape(g, [-1]) for g in tf.gradients(f, params)], 0)

            w = tf.Variable([1.0, 2.0])
            params = [w]
            loss = tf.reduce_sum(w * w)
            g = flat_grad(loss, params)
        """
        after = """
            import tensorflow as tf

            def flat_grad(f, params, tape):
                return tf.concat([tf.reshape(g, [-1]) for g in tape.gradient(f, params)], 0)

            w = tf.Variable([1.0, 2.0])
            params = [w]
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(w * w)
            g = flat_grad(loss, params, tape=tape)
        """
        self.assertCodemod(before, after)

    def test_a_tape_after_defaults_is_keyword_only(self) -> None:
        before = """
            import tensorflow as tf

            def grads(f, params, scale=1.0):
                return [scale * g for g in tf.gradients(f, params)]

            w = tf.Variable(1.0)
            loss = w * w
            g = grads(loss, [w])
        """
        after = """
            import tensorflow as tf

            def grads(f, params, scale=1.0, *, tape):
                return [scale * g for g in tape.gradient(f, params)]

            w = tf.Variable(1.0)
            with tf.GradientTape() as tape:
                loss = w * w
            g = grads(loss, [w], tape=tape)
        """
        self.assertCodemod(before, after)

    def test_sources_not_known_to_be_a_list_are_reported(self) -> None:
        code = """
            import tensorflow as tf

            def grads(f, params):
                return tf.gradients(f, params)

            w = tf.Variable(1.0)
            loss = w * w
            g = grads(loss, w)
        """
        self.assertCodemod(code, code, expected_warnings=[
            "TS104 8:5: `grads` differentiates with respect to `w`, not known to be a list "
            "here (TF1 gives a list, the tape the sources' structure)"])


def test_trpo_conjugate_gradient_reaches_tape_form():
    r = migrate_source(TRPO.read_text(), "trpo_cg.py")
    assert r.mode == "tape", [(f.code, f.line, f.message) for f in r.findings]
    out = r.output
    assert "Session" not in out and "placeholder" not in out and "tf.gradients" not in out
    assert "def flat_grad(f, params, tape):" in out
    assert "pg = flat_grad(surr, params, tape=tape)" in out
    # the Hessian-vector product: the gradient of a gradient, two tapes
    assert "grad_kl = flat_grad(kl, params, tape=tape)" in out
    assert "hvp_ys = tf.reduce_sum(grad_kl * v)" in out
    assert "hvp = flat_grad(hvp_ys, params, tape=outer_tape)" in out
    # the named feed dict and {**feed, ...}
    assert 'feed = {"obs": o, "act": a, "adv": ad}' in out
    assert "run_hvp(**feed, old_logits=old, v=p)" in out
    assert not migrate_source(out, "trpo_cg.py").changed


@pytest.mark.slow
@pytest.mark.tf
def test_trpo_conjugate_gradient_verifies_equal(tmp_path):
    from tapeshift.migrate.legacy.verify import verify_sources

    source = TRPO.read_text()
    report = verify_sources(source, migrate_source(source, "trpo_cg.py").output,
                            tmp_path / "trpo_cg.py")
    assert report.status == "ok", report.to_text()
    assert not report.mismatches
    assert {"g", "step", "old"} <= set(report.new.values)
    assert report.new.values["step"].shape == (15,)
