"""SessionToEager: Session blocks dissolve, sess.run(fetch) becomes the value."""

from textwrap import dedent

from libcst.codemod import CodemodTest

from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.rules.session import SessionToEager


class TestSession(CodemodTest):
    TRANSFORM = SessionToEager

    def test_noop_without_session(self) -> None:
        before = """
            import tensorflow as tf
            x = tf.constant(2.0)
            print(x.numpy())
        """
        self.assertCodemod(before, before)

    def test_local_name_tf_is_not_tensorflow(self) -> None:
        before = """
            import mylib as tf
            sess = tf.Session()
            print(sess.run(3))
            sess.close()
        """
        self.assertCodemod(before, before)

    def test_with_session_and_initializer(self) -> None:
        before = """
            import tensorflow as tf
            W = tf.Variable([1.0, 2.0])
            loss = tf.reduce_sum(W * W)

            # run it
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                value = sess.run(loss)
                print(value)
        """
        after = """
            import tensorflow as tf
            W = tf.Variable([1.0, 2.0])
            loss = tf.reduce_sum(W * W)

            # run it
            value = loss.numpy()
            print(value)
        """
        self.assertCodemod(before, after)

    def test_alias_T_assigned_session_and_close(self) -> None:
        before = """
            import tensorflow as T
            W = T.Variable([1.0, 2.0])
            init = T.initialize_all_variables()
            sess = T.Session()
            sess.run(init)
            print(sess.run(W))
            sess.close()
        """
        after = """
            import tensorflow as T
            W = T.Variable([1.0, 2.0])
            print(W.numpy())
        """
        self.assertCodemod(before, after)

    def test_alias_compat_v1_spelled_out(self) -> None:
        before = """
            import tensorflow as tf
            x = tf.constant(1.0)
            with tf.compat.v1.Session() as sess:
                print(sess.run(x))
        """
        after = """
            import tensorflow as tf
            x = tf.constant(1.0)
            print(x.numpy())
        """
        self.assertCodemod(before, after)

    def test_alias_from_import(self) -> None:
        before = """
            import tensorflow as tf
            from tensorflow import Session
            x = tf.constant(1.0)
            with Session() as s:
                print(s.run(x))
        """
        after = """
            import tensorflow as tf
            x = tf.constant(1.0)
            print(x.numpy())
        """
        self.assertCodemod(before, after)

    def test_fetch_structures_are_kept(self) -> None:
        before = """
            import tensorflow as tf
            a = tf.constant(1.0)
            b = tf.constant(2.0)
            pair = [a, b]
            with tf.Session() as sess:
                l = sess.run([a, b])
                t = sess.run((a, b))
                d = sess.run({"a": a, "b": b})
                p = sess.run(pair)
                s = sess.run(a + b)
        """
        after = """
            import tensorflow as tf
            a = tf.constant(1.0)
            b = tf.constant(2.0)
            pair = [a, b]
            l = [a.numpy(), b.numpy()]
            t = (a.numpy(), b.numpy())
            d = {"a": a.numpy(), "b": b.numpy()}
            p = tf.nest.map_structure(lambda t: t.numpy(), pair)
            s = (a + b).numpy()
        """
        self.assertCodemod(before, after)

    def test_interactive_session_and_eval(self) -> None:
        before = """
            import tensorflow as tf
            sess = tf.InteractiveSession()
            x = tf.constant([1.0])
            tf.global_variables_initializer().run()
            print(x.eval())
        """
        after = """
            import tensorflow as tf
            x = tf.constant([1.0])
            print(x.numpy())
        """
        self.assertCodemod(before, after)

    def test_reset_default_graph_and_config_go(self) -> None:
        before = """
            import tensorflow as tf
            tf.reset_default_graph()
            x = tf.constant(1.0)
            with tf.Session(config=tf.ConfigProto(log_device_placement=True)) as sess:
                print(sess.run(x))
        """
        after = """
            import tensorflow as tf
            x = tf.constant(1.0)
            print(x.numpy())
        """
        self.assertCodemod(before, after)

    def test_named_initializer_run_method(self) -> None:
        before = """
            import tensorflow as tf
            sess = tf.InteractiveSession()
            W = tf.Variable([1.0])
            init = tf.global_variables_initializer()
            init.run()
            print(W.eval())
        """
        after = """
            import tensorflow as tf
            W = tf.Variable([1.0])
            print(W.numpy())
        """
        self.assertCodemod(before, after)

    def test_warns_and_skips_initializer_used_elsewhere(self) -> None:
        before = """
            import tensorflow as tf
            W = tf.Variable([1.0])
            init = tf.global_variables_initializer()
            ops = [init]
        """
        self.assertCodemod(before, before, expected_warnings=[
            "TS115 4:8: the initializer `init` is used in a way the codemod cannot remove"])

    def test_session_body_emptied_in_function(self) -> None:
        before = """
            import tensorflow as tf

            def init():
                with tf.Session() as sess:
                    sess.run(tf.global_variables_initializer())
        """
        after = """
            import tensorflow as tf

            def init():
                pass
        """
        self.assertCodemod(before, after)

    def test_warns_and_skips_feed_dict(self) -> None:
        before = """
            import tensorflow as tf
            x = tf.constant(1.0)
            y = x * 2.0
            with tf.Session() as sess:
                print(sess.run(y, feed_dict={x: 3.0}))
        """
        self.assertCodemod(before, before, expected_warnings=[
            "TS107 5:11: sess.run(..., feed_dict=...): fed values need the graph as a "
            "function, which the feeds rule did not build here"])

    def test_warns_and_skips_train_op(self) -> None:
        before = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            loss = W * W
            train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
            with tf.Session() as sess:
                sess.run(train)
                print(sess.run(loss))
        """
        self.assertCodemod(before, before, expected_warnings=[
            "TS108 4:9: `.minimize(...)` builds an update op; eager code would apply it "
            "once, when the line runs, not at each sess.run"])

    def test_strategy_run_is_not_a_graph_run(self) -> None:
        # strategy.run calls a function on the replicas: the update in it is eager code,
        # applied each time the step runs, as a TF2 training loop writes it
        before = """
            import tensorflow as tf
            strategy = tf.distribute.MirroredStrategy()
            with strategy.scope():
                W = tf.Variable(1.0)
                opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)

            def step():
                noise = tf.random.normal([])
                with tf.GradientTape() as tape:
                    loss = W * W + noise
                opt.apply_gradients([(tape.gradient(loss, W), W)])

            strategy.run(step)
            tf.distribute.get_strategy().run(step)
        """
        self.assertCodemod(before, before, expected_warnings=[])

    def test_a_name_no_longer_a_strategy_runs_the_graph(self) -> None:
        before = """
            import tensorflow as tf
            strategy = tf.distribute.MirroredStrategy()
            strategy = make_runner()
            r = tf.random_normal([2])
            strategy.run(r)
        """
        self.assertCodemod(before, before, expected_warnings=[
            "TS108 4:5: a random op outside a variable initialiser draws new values at "
            "every sess.run, but once in eager code"])

    def test_warns_and_skips_session_passed_around(self) -> None:
        before = """
            import tensorflow as tf
            x = tf.constant(1.0)

            def show(s, t):
                print(s.run(t))

            sess = tf.Session()
            show(sess, x)
            print(x.eval(session=sess))
            other = sess
        """
        self.assertCodemod(before, before, expected_warnings=[
            "TS106 8:6: the session `sess` is used in a way the codemod cannot follow: "
            "passed to `show(...)`",
            "TS106 9:22: the session `sess` is used in a way the codemod cannot follow: "
            "passed to `x.eval(...)` as `session=`",
            "TS106 10:9: the session `sess` is used in a way the codemod cannot follow: "
            "stored under another name"])

    def test_warns_and_skips_random_fetch(self) -> None:
        before = """
            import tensorflow as tf
            r = tf.random_normal([2])
            with tf.Session() as sess:
                print(sess.run(r), sess.run(r))
        """
        self.assertCodemod(before, before, expected_warnings=[
            "TS108 2:5: a random op outside a variable initialiser draws new values at "
            "every sess.run, but once in eager code"])

    def test_notes_seeded_initialiser_once_at_the_seed(self) -> None:
        # TS113 is informational: the file converts; the note is on the seed
        before = """
            import tensorflow as tf
            tf.set_random_seed(0)
            W = tf.Variable(tf.random_normal([2]))
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                print(sess.run(W))
        """
        after = """
            import tensorflow as tf
            tf.set_random_seed(0)
            W = tf.Variable(tf.random_normal([2]))
            print(W.numpy())
        """
        self.assertCodemod(before, after, expected_warnings=[])
        result = migrate_source(dedent(before).lstrip(), "seeded.py")
        assert result.mode == "tape"
        assert "tf.random.set_seed(0)" in result.output
        notes = [(f.code, f.line, f.column, f.changes_numbers) for f in result.findings]
        assert notes == [("TS113", 2, 1, True)]

    def test_notes_seeded_file(self) -> None:
        before = """
            import tensorflow as tf
            tf.set_random_seed(1)
            layer = tf.keras.layers.Dense(3)
        """
        self.assertCodemod(before, before, expected_warnings=[])
        result = migrate_source(dedent(before).lstrip(), "seeded.py")
        assert [(f.code, f.line) for f in result.findings] == [("TS113", 2)]

    def test_unseeded_random_initialiser_converts_with_a_note(self) -> None:
        before = """
            import tensorflow as tf
            W = tf.Variable(tf.random_normal([2]))
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                print(sess.run(W))
        """
        after = """
            import tensorflow as tf
            W = tf.Variable(tf.random_normal([2]))
            print(W.numpy())
        """
        self.assertCodemod(before, after)

    def test_warns_and_skips_fetch_by_string_name(self) -> None:
        before = """
            import tensorflow as tf
            x = tf.constant(1.0, name="x")
            with tf.Session() as sess:
                print(sess.run("x:0"))
        """
        self.assertCodemod(before, before, expected_warnings=[
            "TS115 4:20: fetching a tensor by its string name"])


def test_a_removed_session_line_leaves_its_blank_lines_and_comments():
    src = dedent("""
        import tensorflow as tf


        class Net:
            def __init__(self):
                self.w = tf.Variable(2.0)


        net = Net()

        # open a session
        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        print(sess.run(net.w))
    """).lstrip("\n")
    r = migrate_source(src, "f.py")
    assert r.mode == "tape"
    assert "net = Net()\n\n# open a session\nprint(" in r.output


def test_a_comment_on_the_removed_initializer_goes_with_it():
    src = dedent("""
        import tensorflow as tf

        w = tf.Variable(2.0)

        # Initialize the variables (i.e. assign their default value)
        init = tf.global_variables_initializer()

        # Start training
        with tf.Session() as sess:

            # Run the initializer
            sess.run(init)
            # the weight
            print(sess.run(w))
            # tf.initialize_all_variables() is deprecated: said of no initializer here
            print(sess.run(w * 2))
    """).lstrip("\n")
    r = migrate_source(src, "f.py")
    assert r.mode == "tape"
    assert "Initialize the variables" not in r.output and "Run the initializer" not in r.output
    assert r.output.endswith(dedent("""
        w = tf.Variable(2.0)

        # Start training

        # the weight
        print(w.numpy())
        # tf.initialize_all_variables() is deprecated: said of no initializer here
        print((w * 2).numpy())
    """))


def test_a_comment_on_a_removed_initializer_that_speaks_of_something_else_stays():
    src = dedent("""
        import tensorflow as tf

        w = tf.Variable(2.0)
        sess = tf.Session()
        # now the loop
        sess.run(tf.global_variables_initializer())
        print(sess.run(w))
    """).lstrip("\n")
    r = migrate_source(src, "f.py")
    assert r.mode == "tape"
    assert "# now the loop\nprint(w.numpy())" in r.output


def test_a_longer_note_above_the_removed_initializer_stays():
    # it says more than what went: a reader of the migrated code still needs it
    src = dedent("""
        import tensorflow as tf

        w = tf.Variable(2.0)
        # NOTE: learning rate 0.2 diverges on the real data set, use 0.05 there.
        # Initialize the variables (i.e. assign their default value)
        init = tf.global_variables_initializer()
        sess = tf.Session()
        # Initialisation happens lazily in TF2, but the batch size of 4 matters
        sess.run(init)
        print(sess.run(w))
    """).lstrip("\n")
    r = migrate_source(src, "f.py")
    assert r.mode == "tape"
    assert "# NOTE: learning rate 0.2 diverges" in r.output
    assert "# Initialize the variables (i.e. assign their default value)" in r.output
    assert "# Initialisation happens lazily in TF2, but the batch size of 4 matters" in r.output
