"""DefaultGraphBlocks: a graph block holding a whole program dissolves into its statements."""

from pathlib import Path

import pytest
from libcst.codemod import CodemodTest

from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.rules.default_graph import DefaultGraphBlocks

PROGRAM = Path(__file__).resolve().parents[1] / "data" / "program_structure" / \
    "graph_block_regression.py"


class TestDefaultGraph(CodemodTest):
    TRANSFORM = DefaultGraphBlocks

    def test_unnamed_graph_around_the_program(self) -> None:
        before = """
            import tensorflow as tf

            # build and run
            with tf.Graph().as_default():
                # weights
                w = tf.Variable(5.0)
                with tf.Session() as sess:
                    print(sess.run(w))
        """
        after = """
            import tensorflow as tf

            # build and run
            # weights
            w = tf.Variable(5.0)
            with tf.Session() as sess:
                print(sess.run(w))
        """
        self.assertCodemod(before, after)

    def test_named_graph_and_a_session_on_it(self) -> None:
        before = """
            import tensorflow as tf
            graph = tf.Graph()
            with graph.as_default():
                w = tf.Variable(5.0)
            with tf.Session(graph=graph) as sess:
                sess.run(tf.global_variables_initializer())
            with tf.Session(config=cfg, graph=graph) as sess:
                print(sess.run(w))
        """
        after = """
            import tensorflow as tf
            w = tf.Variable(5.0)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
            with tf.Session(config=cfg) as sess:
                print(sess.run(w))
        """
        self.assertCodemod(before, after)

    def test_in_a_function_and_the_main_guard(self) -> None:
        before = """
            import tensorflow as tf
            def main():
                with tf.Graph().as_default():
                    w = tf.Variable(1.0)
            if __name__ == "__main__":
                with tf.Graph().as_default():
                    v = tf.Variable(2.0)
        """
        after = """
            import tensorflow as tf
            def main():
                w = tf.Variable(1.0)
            if __name__ == "__main__":
                v = tf.Variable(2.0)
        """
        self.assertCodemod(before, after)

    def test_in_a_test_case_method(self) -> None:
        # a unittest method builds its own graph: only that method's block goes
        before = """
            import tensorflow as tf

            class TestLoss(unittest.TestCase):
                def test_positive(self):
                    values = [1.0, 2.0]
                    with tf.Graph().as_default():
                        loss = tf.reduce_sum(tf.constant(values))
                        with tf.Session() as sess:
                            res = sess.run(loss)
                    self.assertGreater(res, 0.0)

                def test_two(self):
                    with tf.Graph().as_default():
                        a = tf.constant(1.0)
                    with tf.Graph().as_default():
                        b = tf.constant(2.0)
        """
        after = """
            import tensorflow as tf

            class TestLoss(unittest.TestCase):
                def test_positive(self):
                    values = [1.0, 2.0]
                    loss = tf.reduce_sum(tf.constant(values))
                    with tf.Session() as sess:
                        res = sess.run(loss)
                    self.assertGreater(res, 0.0)

                def test_two(self):
                    with tf.Graph().as_default():
                        a = tf.constant(1.0)
                    with tf.Graph().as_default():
                        b = tf.constant(2.0)
        """
        self.assertCodemod(before, after)

    def test_other_tensorflow_code_beside_the_graph_keeps_it(self) -> None:
        # c is in the outer default graph: dissolving would merge two graphs
        before = """
            import tensorflow as tf
            c = tf.constant(1.0)
            with tf.Graph().as_default():
                w = tf.Variable(1.0)
        """
        self.assertCodemod(before, before)

    def test_functions_beside_the_graph_build_nothing_until_called(self) -> None:
        before = """
            import tensorflow as tf
            def model(x):
                return tf.layers.dense(x, 3)
            with tf.Graph().as_default():
                y = model(tf.ones([2, 4]))
        """
        after = """
            import tensorflow as tf
            def model(x):
                return tf.layers.dense(x, 3)
            y = model(tf.ones([2, 4]))
        """
        self.assertCodemod(before, after)

    def test_a_function_called_outside_the_graph_keeps_it(self) -> None:
        before = """
            import tensorflow as tf
            def model(x):
                return tf.layers.dense(x, 3)
            z = model(inputs)
            with tf.Graph().as_default():
                y = model(inputs)
        """
        self.assertCodemod(before, before)

    def test_two_graphs_stay(self) -> None:
        before = """
            import tensorflow as tf
            with tf.Graph().as_default():
                w = tf.Variable(1.0)
            with tf.Graph().as_default():
                w = tf.Variable(2.0)
        """
        self.assertCodemod(before, before)

    def test_a_graph_used_by_name_stays(self) -> None:
        for use in ("graph.finalize()", "print(graph.get_operations())"):
            before = f"""
                import tensorflow as tf
                graph = tf.Graph()
                with graph.as_default():
                    w = tf.Variable(1.0)
                    {use}
            """
            self.assertCodemod(before, before)

    def test_graph_and_session_in_one_with_keeps_the_sessions_block(self) -> None:
        before = """
            import tensorflow as tf
            def main():
                # a fresh graph for the agent
                with tf.Graph().as_default(), tf.Session() as sess:
                    w = tf.Variable(1.0)
                    print(sess.run(w))
        """
        after = """
            import tensorflow as tf
            def main():
                # a fresh graph for the agent
                with tf.Session() as sess:
                    w = tf.Variable(1.0)
                    print(sess.run(w))
        """
        self.assertCodemod(before, after)

    def test_named_graph_and_its_session_in_one_with(self) -> None:
        before = """
            import tensorflow as tf
            graph = tf.Graph()
            with graph.as_default(), tf.Session(graph=graph) as sess:
                v = tf.Variable(2.0)
        """
        after = """
            import tensorflow as tf
            with tf.Session() as sess:
                v = tf.Variable(2.0)
        """
        self.assertCodemod(before, after)

    def test_graph_with_something_other_than_a_session_stays(self) -> None:
        before = """
            import tensorflow as tf
            with tf.Graph().as_default(), tf.device("/cpu:0"):
                w = tf.Variable(1.0)
            def f():
                with tf.Graph().as_default(), tf.Session() as a, tf.Session() as b:
                    w = tf.Variable(1.0)
        """
        self.assertCodemod(before, before)

    def test_graph_bound_by_as_stays(self) -> None:
        before = """
            import tensorflow as tf
            with tf.Graph().as_default() as g:
                w = tf.Variable(1.0)
        """
        self.assertCodemod(before, before)


def test_program_in_a_named_graph_reaches_tape_form():
    r = migrate_source(PROGRAM.read_text(encoding="utf-8"), PROGRAM.name)
    assert r.mode == "tape", [(f.code, f.line, f.message) for f in r.findings]
    for gone in ("Graph(", "as_default", "Session", "placeholder", "graph="):
        assert gone not in r.output, gone
    # the placeholders went; their comment stays with the code that follows them
    assert "\n\n# the model\nw = tf.Variable(" in r.output
    assert not migrate_source(r.output, PROGRAM.name).changed


@pytest.mark.tf
@pytest.mark.slow
def test_program_in_a_named_graph_verifies_equal(tmp_path):
    from tapeshift.migrate.legacy.verify import verify_sources

    source = PROGRAM.read_text(encoding="utf-8")
    report = verify_sources(source, migrate_source(source, PROGRAM.name).output,
                            tmp_path / PROGRAM.name, timeout=300)
    assert report.status == "ok", report.to_text()
    assert sum(1 for row in report.rows if row.name.startswith("stdout:") and row.compared) >= 6
