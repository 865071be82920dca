"""GradientTargets: an expression differentiated by tf.gradients gets a statement of its own."""

from pathlib import Path

import pytest
from libcst.codemod import CodemodTest

from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.rules.gradient_targets import GradientTargets

WGAN_GP = Path(__file__).resolve().parents[1] / "data" / "program_structure" / "wgan_gp.py"


class TestGradientTargets(CodemodTest):
    TRANSFORM = GradientTargets

    def test_a_call_on_names_is_named_after_them(self) -> None:
        before = """
            import tensorflow as tf

            # the penalty's gradient
            grad = tf.gradients(critic(interp), [interp])[0]
        """
        after = """
            import tensorflow as tf

            # the penalty's gradient
            critic_interp = critic(interp)
            grad = tf.gradients(critic_interp, [interp])[0]
        """
        self.assertCodemod(before, after)

    def test_other_expressions_are_named_after_the_assignment(self) -> None:
        before = """
            import tensorflow as T

            def hvp(g, v, params):
                with T.name_scope("hvp"):
                    out = T.gradients(ys=T.reduce_sum(g * v), xs=params)
                return out
            T.gradients(a + b, [a])
        """
        after = """
            import tensorflow as T

            def hvp(g, v, params):
                with T.name_scope("hvp"):
                    out_ys = T.reduce_sum(g * v)
                    out = T.gradients(ys=out_ys, xs=params)
                return out
            gradient_target = a + b
            T.gradients(gradient_target, [a])
        """
        self.assertCodemod(before, after)

    def test_names_lists_attributes_and_inner_scopes_are_left(self) -> None:
        code = """
            import tensorflow as tf

            a = tf.gradients(loss, w)
            b = tf.gradients([l1, l2], w)
            c = tf.gradients(self.loss, w)
            d = [tf.gradients(f(x), x) for x in xs]
            e = tf.gradients(f(x), x) if train else None
            g = lambda x: tf.gradients(f(x), x)
            h = other.gradients(f(x), x)
        """
        self.assertCodemod(code, code)

    def test_an_optimizer_s_loss_expression_is_named_too(self) -> None:
        # the feeds rule turns minimize(loss) into tf.gradients(loss, var_list)
        before = """
            import tensorflow as tf

            opt = tf.train.AdamOptimizer(0.1)
            train = opt.minimize(-exp_v)  # maximize exp_v
            self.train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss=a + b, var_list=w)
            pairs = opt.compute_gradients(tf.reduce_sum(y))
        """
        after = """
            import tensorflow as tf

            opt = tf.train.AdamOptimizer(0.1)
            neg_exp_v = -exp_v
            train = opt.minimize(neg_exp_v)  # maximize exp_v
            train_op_loss = a + b
            self.train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss=train_op_loss, var_list=w)
            pairs_loss = tf.reduce_sum(y)
            pairs = opt.compute_gradients(pairs_loss)
        """
        self.assertCodemod(before, after)

    def test_minimize_of_anything_but_a_tf1_optimizer_is_left(self) -> None:
        code = """
            import tensorflow as tf
            from scipy import optimize

            opt = tf.train.AdamOptimizer(0.1)
            opt = make_optimizer()
            a = opt.minimize(-loss)
            b = optimize.minimize(-f, x0)
            c = tf.keras.optimizers.Adam().minimize(-loss, var_list=w)
        """
        self.assertCodemod(code, code)

    def test_a_taken_name_is_not_reused(self) -> None:
        before = """
            import tensorflow as tf

            critic_x = 1
            g = tf.gradients(critic(x), x)
        """
        after = """
            import tensorflow as tf

            critic_x = 1
            critic_x_1 = critic(x)
            g = tf.gradients(critic_x_1, x)
        """
        self.assertCodemod(before, after)


def test_wgan_gp_reaches_tape_form_with_a_nested_tape():
    r = migrate_source(WGAN_GP.read_text(), "wgan_gp.py")
    assert r.mode == "tape", [(f.code, f.line, f.message) for f in r.findings]
    out = r.output
    assert "Session" not in out and "placeholder" not in out and "tf.gradients" not in out
    # the penalty's gradient under an inner tape, inside the critic's training tape
    assert "with tf.GradientTape() as outer_tape:" in out
    assert "critic_interp = critic(interp)" in out
    assert "grad = tape.gradient(critic_interp, [interp])[0]" in out
    assert not migrate_source(out, "wgan_gp.py").changed


@pytest.mark.slow
@pytest.mark.tf
def test_wgan_gp_verifies_equal(tmp_path):
    from tapeshift.migrate.legacy.verify import verify_sources

    source = WGAN_GP.read_text()
    migrated = migrate_source(source, "wgan_gp.py").output
    report = verify_sources(source, migrated, tmp_path / "wgan_gp.py", align_random=True)
    assert report.status == "ok", report.to_text()
    # 4 steps: critic loss, penalty and generator loss each, and the 4 printed lines
    assert report.compared == 12 and not report.mismatches
    assert float(report.new.values["gp"]) > 0.0  # the penalty is in the loss, not zero
