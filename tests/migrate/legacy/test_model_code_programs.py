"""TF1 model code in the style of popular public programs, migrated to tape form and verified.

Each program (tests/migrate/data/model_code/) builds its model with variable
scopes, ``get_variable``, ``tf.layers``, collections by scope or a layer helper
making its variables at each call; the codemod
must take it to tape form (no Session, placeholder, variable scope or
tf.layers left; tf-keras layers under the TF1 names), and ``tapeshift verify``
must find the migrated program's numbers equal to the TF1 program's, random
initial values drawn from one stream (``--align-random``).
"""

import functools
from pathlib import Path

import pytest

from tapeshift.migrate.engine.pipeline import migrate_source

DATA = Path(__file__).resolve().parents[1] / "data" / "model_code"
TIMEOUT = 300
PROGRAMS = sorted(p.name for p in DATA.glob("*.py"))
GONE = ("tf.Session(", "tf.placeholder(", "tf.variable_scope(", "tf.get_variable(", "tf.layers.",
        "tf.get_collection(", "GraphKeys", "tf.gradients(", ".minimize(")


@functools.cache
def migrated(name):
    return migrate_source((DATA / name).read_text(encoding="utf-8"), name)


def test_the_programs():
    assert PROGRAMS == ["actor_critic_scopes.py", "add_layer_regression.py", "mlp_batch_norm.py",
                        "siamese_auto_reuse.py"]


@pytest.mark.parametrize("name", PROGRAMS)
def test_reaches_tape_form_with_tf1_names(name):
    r = migrated(name)
    assert r.mode == "tape", [(f.code, f.line, f.message) for f in r.findings]
    for gone in GONE:
        assert gone not in r.output, gone
    assert not migrate_source(r.output, name).changed  # idempotent
    compile(r.output, name, "exec")


def test_siamese_tower_is_made_once_and_shared():
    out = migrated("siamese_auto_reuse.py").output
    assert 'siamese_w = tf.Variable(tf.compat.v1.random_normal_initializer(0.0, 0.3)([6, 8]), ' \
           'name="siamese/w")' in out
    assert 'siamese_embed = tf_keras.layers.Dense(4, name="siamese/embed")' in out
    assert "    h = tf.nn.relu(tf.matmul(x, siamese_w) + siamese_b)\n" in out
    assert out.count("siamese_embed = ") == 1


def test_batch_norm_updates_at_the_training_call():
    out = migrated("mlp_batch_norm.py").output
    assert 'bn1 = tf_keras.layers.BatchNormalization(name="mlp/bn1")' in out
    assert "h = bn1(h, training=training)" in out
    assert "tf.control_dependencies(" not in out and "GraphKeys.UPDATE_OPS" not in out


def test_actor_critic_collections_are_the_scopes_variables():
    out = migrated("actor_critic_scopes.py").output
    assert "ae_params = [a_w]" in out and "at_params = [a_w_]" in out
    assert "ce_params = [*eval_l1.trainable_variables, *eval_q.trainable_variables]" in out
    assert "ct_params = [*target_l1.variables, *target_q.variables]" in out
    assert "target_l1(tf_keras.Input([S_DIM + A_DIM]))" in out


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("name", PROGRAMS)
def test_verify_finds_the_tf1_numbers(name, tmp_path):
    from tapeshift.migrate.legacy.verify import verify_sources

    r = migrated(name)
    report = verify_sources((DATA / name).read_text(encoding="utf-8"), r.output, tmp_path / name,
                            timeout=TIMEOUT, seed=0, align_random=True)
    assert report.status == "ok", report.to_text()
    printed = [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
    assert len(printed) >= 6, report.to_text()  # every training step's print
