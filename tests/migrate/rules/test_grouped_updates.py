"""An update grouped alone, ``step = tf.group(W.assign(value))``, run by ``step.run(feed,
session=sess)`` with a named feed dict (the TF cookbook's genetic algorithm).

The group becomes the update, run in the step function of the runs that fetch it, and
fetches None as TF1's group does; the op's ``.run(feed, session=...)`` takes its feeds
first. Tests: the exact output, what stays TF1 and why, the legacy numbers.
"""

import pytest

from rule_programs import assert_left_compat, codes, migrated, src as _src, verified_prints  # tests/support

EVOLVE = _src("""
    import numpy as np
    import tensorflow as tf

    sess = tf.Session()
    population = tf.Variable(np.linspace(-1.0, 1.0, 12).reshape(4, 3), dtype=tf.float32)
    target = tf.placeholder(tf.float32, [1, 3])
    noise = tf.placeholder(tf.float32, [2, 3])
    fitness = -tf.reduce_mean(tf.square(population - target), 1)
    top_vals, top_ind = tf.nn.top_k(fitness, k=4)
    parents = tf.gather(population, top_ind)[:2]
    best = tf.reduce_max(top_vals)
    step = tf.group(population.assign(tf.concat([parents, parents + noise], 0)))
    sess.run(tf.global_variables_initializer())
    for i in range(4):
        feed = {target: np.ones((1, 3)), noise: np.full((2, 3), 0.1 * i)}
        step.run(feed, session=sess)
        print(i, sess.run(best, feed_dict=feed), sess.run(step, feed))
    print(sess.run(population))
""")


def test_a_group_of_one_update_runs_it_when_fetched():
    r = migrated(EVOLVE)
    assert r.mode == "tape", codes(r)
    assert codes(r) == []
    assert r.output == _src('''
        import numpy as np
        import tensorflow as tf

        population = tf.Variable(np.linspace(-1.0, 1.0, 12).reshape(4, 3), dtype=tf.float32)


        def run_step(target, noise):
            """sess.run(step) as a function of the fed values."""
            target = tf.convert_to_tensor(target, tf.float32)
            noise = tf.convert_to_tensor(noise, tf.float32)
            fitness = -tf.reduce_mean(tf.square(population - target), 1)
            top_vals, top_ind = tf.nn.top_k(fitness, k=4)
            parents = tf.gather(population, top_ind)[:2]
            population.assign(tf.concat([parents, parents + noise], 0))
            return None


        def run_best(target, noise=None):
            """sess.run(best) as a function of the fed values."""
            target = tf.convert_to_tensor(target, tf.float32)
            fitness = -tf.reduce_mean(tf.square(population - target), 1)
            top_vals, top_ind = tf.nn.top_k(fitness, k=4)
            best = tf.reduce_max(top_vals)
            return best.numpy()


        for i in range(4):
            feed = {"target": np.ones((1, 3)), "noise": np.full((2, 3), 0.1 * i)}
            run_step(**feed)
            print(i, run_best(**feed), run_step(**feed))
        print(population.numpy())
    ''')
    assert any("`tf.group(...)` of one update -> the update, run when fetched" in c.description
               for c in r.changes)
    assert any("`step.run(...)` -> `run_step(**feed)`" in c.description for c in r.changes)
    assert not migrated(r.output).changed


def test_tf_assign_grouped_alone_becomes_the_variable_method():
    r = migrated(EVOLVE.replace("tf.group(population.assign(", "tf.group(tf.assign(population, "))
    assert r.mode == "tape", codes(r)
    assert "\n    population.assign(tf.concat([parents, parents + noise], 0))\n    return None\n" \
        in r.output


def test_a_reader_of_the_variable_fetched_beside_the_update_is_reported():
    # TF1 computes `total` and applies the update at the same time, in no fixed order
    r = migrated(EVOLVE.replace("best = tf.reduce_max(top_vals)\n",
                                "best = tf.reduce_max(top_vals)\ntotal = tf.reduce_sum(population)\n")
                 .replace("sess.run(step, feed))", "sess.run([step, total], feed))"))
    assert r.mode == "tape", codes(r)
    assert [(f.code, f.line) for f in r.findings] == [("TS132", 18)]
    assert "TF1 runs `step` and `total` of one sess.run at the same time, in no fixed order; " \
        "the step function computes `total` first, from `population` before the update" \
        in r.findings[0].message
    # fetched alone, or beside what the update itself waits for: nothing to report
    assert codes(migrated(EVOLVE)) == []


@pytest.mark.parametrize("change, code, why", [
    # two updates TF1 starts together: one line each would fix an order (not converted)
    (("tf.group(population.assign(tf.concat([parents, parents + noise], 0)))",
      "tf.group(population.assign(tf.concat([parents, parents + noise], 0)), "
      "population.assign_add(noise[:1] * 0 + 1.0))"), "TS108", "`.assign(...)` in fed graph code"),
    # an update of a tensor, not of a variable of this file
    (("tf.group(population.assign(", "tf.group(parents.assign("),
     "TS108", "`.assign(...)` in fed graph code"),
])
def test_groups_it_leaves_to_tf1(change, code, why):
    assert_left_compat(EVOLVE, change, code, why)


@pytest.mark.tf
@pytest.mark.slow
def test_the_grouped_update_keeps_the_legacy_numbers(tmp_path):
    prints = verified_prints(EVOLVE, tmp_path / "evolve.py")
    assert len(prints) == 5  # 4 generations (best, the group's None), the population
