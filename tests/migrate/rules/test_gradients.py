"""GradientsToTape: tf.gradients -> tape.gradient, before/after pairs."""

from libcst.codemod import CodemodTest

from tapeshift.migrate.rules.gradients import GradientsToTape


class TestGradients(CodemodTest):
    TRANSFORM = GradientsToTape

    def test_noop_without_gradients(self) -> None:
        before = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            with tf.GradientTape() as tape:
                loss = W * W
            g = tape.gradient(loss, W)
        """
        self.assertCodemod(before, before)

    def test_local_name_tf_is_not_tensorflow(self) -> None:
        before = """
            import mylib as tf
            W = tf.Variable(1.0)
            loss = W * W
            g = tf.gradients(loss, W)[0]
        """
        self.assertCodemod(before, before)

    def test_parameter_named_tf_is_not_tensorflow(self) -> None:
        before = """
            import tensorflow

            def f(tf, loss, W):
                return tf.gradients(loss, W)
        """
        self.assertCodemod(before, before)

    def test_index_zero_becomes_tensor(self) -> None:
        before = """
            import tensorflow as tf
            W = tf.Variable([[1.0, 2.0]])
            # forward pass
            loss = tf.reduce_sum(W * W)
            g = tf.gradients(loss, W)[0]
        """
        after = """
            import tensorflow as tf
            W = tf.Variable([[1.0, 2.0]])
            # forward pass
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(W * W)
            g = tape.gradient(loss, W)
        """
        self.assertCodemod(before, after)

    def test_alias_T(self) -> None:
        before = """
            import tensorflow as T
            W = T.Variable(1.0)
            loss = W * W
            g = T.gradients(loss, W)[0]
        """
        after = """
            import tensorflow as T
            W = T.Variable(1.0)
            with T.GradientTape() as tape:
                loss = W * W
            g = tape.gradient(loss, W)
        """
        self.assertCodemod(before, after)

    def test_alias_from_import(self) -> None:
        before = """
            import tensorflow as tf
            from tensorflow import gradients
            W = tf.Variable(1.0)
            loss = W * W
            g = gradients(loss, W)[0]
        """
        after = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            with tf.GradientTape() as tape:
                loss = W * W
            g = tape.gradient(loss, W)
        """
        self.assertCodemod(before, after)

    def test_alias_compat_v1(self) -> None:
        before = """
            import tensorflow.compat.v1 as tf
            W = tf.Variable(1.0)
            loss = W * W
            g = tf.gradients(loss, W)[0]
        """
        after = """
            import tensorflow.compat.v1 as tf
            W = tf.Variable(1.0)
            with tf.GradientTape() as tape:
                loss = W * W
            g = tape.gradient(loss, W)
        """
        self.assertCodemod(before, after)

    def test_bare_call_stays_a_list(self) -> None:
        before = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            loss = W * W
            grads = tf.gradients(loss, W)
            print(grads[0])
        """
        after = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            with tf.GradientTape() as tape:
                loss = W * W
            grads = [tape.gradient(loss, W)]
            print(grads[0])
        """
        self.assertCodemod(before, after)

    def test_single_unpack(self) -> None:
        before = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            loss = W * W
            g, = tf.gradients(loss, W)
        """
        after = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            with tf.GradientTape() as tape:
                loss = W * W
            g = tape.gradient(loss, W)
        """
        self.assertCodemod(before, after)

    def test_list_of_sources_and_tuple(self) -> None:
        before = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            b = tf.Variable(2.0)
            loss = W * b
            gW, gb = tf.gradients(loss, [W, b])
            grads = tf.gradients(loss, (W, b))
        """
        after = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            b = tf.Variable(2.0)
            with tf.GradientTape(persistent=True) as tape:
                loss = W * b
            gW, gb = tape.gradient(loss, [W, b])
            grads = tape.gradient(loss, [W, b])
            del tape
        """
        self.assertCodemod(before, after)

    def test_params_name_bound_to_list(self) -> None:
        before = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            b = tf.Variable(2.0)
            params = [W, b]
            loss = W * b
            grads = tf.gradients(loss, params)
        """
        after = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            b = tf.Variable(2.0)
            params = [W, b]
            with tf.GradientTape() as tape:
                loss = W * b
            grads = tape.gradient(loss, params)
        """
        self.assertCodemod(before, after)

    def test_grad_ys_positional_and_summed_targets(self) -> None:
        before = """
            import tensorflow as tf
            W = tf.Variable([1.0, 2.0])
            h = W * 3.0
            h2 = W * W
            dh = tf.constant([1.0, -1.0])
            g = tf.gradients(h, W, -dh)[0]
            s = tf.gradients([h, h2], W, unconnected_gradients="zero", gate_gradients=True)[0]
        """
        after = """
            import tensorflow as tf
            W = tf.Variable([1.0, 2.0])
            with tf.GradientTape(persistent=True) as tape:
                h = W * 3.0
                h2 = W * W
            dh = tf.constant([1.0, -1.0])
            g = tape.gradient(h, W, output_gradients=-dh)
            s = tape.gradient([h, h2], W, unconnected_gradients="zero")
            del tape
        """
        self.assertCodemod(before, after)

    def test_watch_for_input_that_is_not_a_variable(self) -> None:
        before = """
            import tensorflow as tf
            x = tf.constant([1.0, 2.0])
            W = tf.Variable([3.0, 4.0])
            y = tf.reduce_sum(x * W)
            dx = tf.gradients(y, x)[0]
        """
        after = """
            import tensorflow as tf
            x = tf.constant([1.0, 2.0])
            W = tf.Variable([3.0, 4.0])
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.reduce_sum(x * W)
            dx = tape.gradient(y, x)
        """
        self.assertCodemod(before, after)

    def test_watch_for_activation_not_computed_from_a_variable(self) -> None:
        before = """
            import tensorflow as tf
            x = tf.constant([1.0, 2.0])
            a = x * 2.0
            y = tf.reduce_sum(a * a)
            da = tf.gradients(y, a)[0]
        """
        after = """
            import tensorflow as tf
            x = tf.constant([1.0, 2.0])
            a = x * 2.0
            with tf.GradientTape() as tape:
                tape.watch(a)
                y = tf.reduce_sum(a * a)
            da = tape.gradient(y, a)
        """
        self.assertCodemod(before, after)

    def test_watch_for_non_trainable_variable(self) -> None:
        before = """
            import tensorflow as tf
            s = tf.Variable(2.0, trainable=False)
            y = s * s
            ds = tf.gradients(y, s)[0]
        """
        after = """
            import tensorflow as tf
            s = tf.Variable(2.0, trainable=False)
            with tf.GradientTape() as tape:
                tape.watch(s)
                y = s * s
            ds = tape.gradient(y, s)
        """
        self.assertCodemod(before, after)

    def test_second_order_nested_tapes(self) -> None:
        before = """
            import tensorflow as tf
            x = tf.constant([1.0, 2.0])
            v = tf.constant([1.0, 0.0])
            y = tf.reduce_sum(x * x * x)
            g = tf.gradients(y, x)[0]
            gv = tf.reduce_sum(g * v)
            hvp = tf.gradients(gv, x)[0]
        """
        after = """
            import tensorflow as tf
            x = tf.constant([1.0, 2.0])
            v = tf.constant([1.0, 0.0])
            with tf.GradientTape() as outer_tape:
                outer_tape.watch(x)
                with tf.GradientTape() as tape:
                    tape.watch(x)
                    y = tf.reduce_sum(x * x * x)
                g = tape.gradient(y, x)
                gv = tf.reduce_sum(g * v)
            hvp = outer_tape.gradient(gv, x)
        """
        self.assertCodemod(before, after)

    def test_inside_function_body(self) -> None:
        before = """
            import tensorflow as tf

            def grads(W, x):
                W = tf.Variable(W)
                loss = tf.reduce_sum(W * x)
                return tf.gradients(loss, W)[0]
        """
        after = """
            import tensorflow as tf

            def grads(W, x):
                W = tf.Variable(W)
                with tf.GradientTape() as tape:
                    loss = tf.reduce_sum(W * x)
                return tape.gradient(loss, W)
        """
        self.assertCodemod(before, after)

    def test_tape_name_does_not_clash(self) -> None:
        before = """
            import tensorflow as tf
            tape = "audio"
            W = tf.Variable(1.0)
            loss = W * W
            g = tf.gradients(loss, W)[0]
        """
        after = """
            import tensorflow as tf
            tape = "audio"
            W = tf.Variable(1.0)
            with tf.GradientTape() as tape_1:
                loss = W * W
            g = tape_1.gradient(loss, W)
        """
        self.assertCodemod(before, after)

    def test_warns_and_skips_stop_gradients(self) -> None:
        before = """
            import tensorflow as tf
            a = tf.Variable(1.0)
            b = a * 2.0
            g = tf.gradients(a + b, [a, b], stop_gradients=[a, b])
        """
        self.assertCodemod(before, before, expected_warnings=[
            "TS102 4:5: tf.gradients(..., stop_gradients=...) has no GradientTape "
            "equivalent; put tf.stop_gradient in the forward code"])

    def test_a_while_loop_body_gets_a_tape_in_each_pass(self) -> None:
        # eager TF2 calls the body once per pass on that pass's loop tensors
        before = """
            import tensorflow as tf

            def body(i, x):
                y = x * x
                g = tf.gradients(y, x)[0]
                return i + 1, x - 0.1 * g

            out = tf.while_loop(lambda i, x: i < 3, body, [0, tf.constant(1.0)])
        """
        after = """
            import tensorflow as tf

            def body(i, x):
                with tf.GradientTape() as tape:
                    tape.watch(x)
                    y = x * x
                g = tape.gradient(y, x)
                return i + 1, x - 0.1 * g

            out = tf.while_loop(lambda i, x: i < 3, body, [0, tf.constant(1.0)])
        """
        self.assertCodemod(before, after)

    def test_warns_and_skips_other_control_flow_functions(self) -> None:
        # a scan function, or a while_loop body over nested loop variables: what
        # its parameters are is not known here
        for loop, params in (("tf.scan(body, tf.ones([3]))", "x"),
                             ("tf.while_loop(lambda x: x < 3, body, [[tf.constant(1.0)]])", "x")):
            before = f"""
                import tensorflow as tf

                def body({params}):
                    y = x * x
                    g = tf.gradients(y, x)[0]
                    return x - 0.1 * g

                out = {loop}
            """
            self.assertCodemod(before, before, expected_warnings=[
                "TS103 5:9: tf.gradients inside `body`, which is run by TensorFlow "
                "control flow (while_loop, map_fn, ...)"])

    def test_a_loop_that_computes_its_target_gets_a_tape_in_each_pass(self) -> None:
        before = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            for step in range(3):
                loss = W * W * step
                g = tf.gradients(loss, W)[0]
        """
        after = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            for step in range(3):
                with tf.GradientTape() as tape:
                    loss = W * W * step
                g = tape.gradient(loss, W)
        """
        self.assertCodemod(before, after)

    def test_warns_and_skips_a_loop_that_carries_its_target_across_passes(self) -> None:
        before = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            h = tf.constant(1.0)
            for step in range(3):
                h = h * W
                g = tf.gradients(h, W)[0]
        """
        self.assertCodemod(before, before, expected_warnings=[
            "TS103 6:9: tf.gradients in a loop whose target depends on `h`, which an earlier "
            "pass computed from the sources (one tape around the whole loop would be needed): "
            "not converted"])

    def test_gradients_under_if_for_and_with_follow_the_tape(self) -> None:
        before = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            losses = [W * W, W * W * W]
            grads = []
            for l in losses:
                grads.append(tf.gradients(l, W)[0])
            if CLIP:
                g = tf.clip_by_norm(tf.gradients(losses[0], W)[0], 1.0)
            else:
                g = tf.gradients(losses[0], W)[0]
            with tf.device("/cpu:0"):
                h = tf.gradients(losses[1], [W])
        """
        after = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            with tf.GradientTape(persistent=True) as tape:
                losses = [W * W, W * W * W]
            grads = []
            for l in losses:
                grads.append(tape.gradient(l, W))
            if CLIP:
                g = tf.clip_by_norm(tape.gradient(losses[0], W), 1.0)
            else:
                g = tape.gradient(losses[0], W)
            with tf.device("/cpu:0"):
                h = tape.gradient(losses[1], [W])
            del tape
        """
        self.assertCodemod(before, after)

    def test_warns_and_skips_unresolved_sources(self) -> None:
        before = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            loss = W * W
            grads = tf.gradients(loss, tf.trainable_variables())
        """
        self.assertCodemod(before, before, expected_warnings=[
            "TS104 4:9: the sources `tf.trainable_variables()` are not a name or a list of names"])

    def test_interleaved_gradient_moves_after_the_block(self) -> None:
        before = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            h = W * 3.0
            g1 = tf.gradients(h, W)[0]
            loss = h * h
            g2 = tf.gradients(loss, W)[0]
        """
        after = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            with tf.GradientTape(persistent=True) as tape:
                h = W * 3.0
                loss = h * h
            g1 = tape.gradient(h, W)
            g2 = tape.gradient(loss, W)
            del tape
        """
        self.assertCodemod(before, after)

    def test_warns_and_skips_interleaved(self) -> None:
        before = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            h = W * 3.0
            print(tf.gradients(h, W)[0])
            loss = h * h
            g2 = tf.gradients(loss, W)[0]
        """
        self.assertCodemod(before, before, expected_warnings=[
            "TS105 4:7: this gradient is taken inside the forward computation of its "
            "tape (which ends at line 5)"])

    def test_crlf_and_tabs_are_kept(self) -> None:
        before = (
            "import tensorflow as tf\r\n"
            "def f():\r\n"
            "\tW = tf.Variable(1.0)\r\n"
            "\tloss = W * W  # the loss\r\n"
            "\treturn tf.gradients(loss, W)[0]\r\n"
        )
        after = (
            "import tensorflow as tf\r\n"
            "def f():\r\n"
            "\tW = tf.Variable(1.0)\r\n"
            "\twith tf.GradientTape() as tape:\r\n"
            "\t\tloss = W * W  # the loss\r\n"
            "\treturn tape.gradient(loss, W)\r\n"
        )
        import libcst as cst
        from libcst.codemod import CodemodContext

        out = GradientsToTape(CodemodContext()).transform_module(cst.parse_module(before))
        assert out.code == after
