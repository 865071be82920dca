"""The TS109 audit (issue #17) is complete: every TF1-only name is classified,
and what stays TF1-only is documented in docs/codes.md. Needs no TensorFlow."""

import re

from tapeshift.migrate.rules.renames import AUDITED_EAGER_COMPAT, IDENTICAL, RENAMES
from tapeshift.migrate.rules.tf1_only import handled, TRULY_TF1_ONLY, tf1_only, truly_tf1_only_group
from tapeshift.migrate.engine.tf1_api_table import TF1_ONLY
from tapeshift.migrate.engine.findings import REGISTRY


def _converted(name):
    parts = name.split(".")
    return any(".".join(parts[:k]) in handled() for k in range(1, len(parts) + 1))


def _matches(name, pattern):
    head, star, tail = pattern.partition("*")
    return name == pattern or bool(star) and name.startswith(head) and name.endswith(tail)


def test_every_tf1_only_name_is_classified_once():
    unclassified, twice = [], []
    for name in sorted(TF1_ONLY):
        if _converted(name):
            assert tf1_only(name) is None, name  # renamed or kept: no TS109
            continue
        assert tf1_only(name) is not None, name  # it still blocks tape form
        reasons = [r for r, patterns in TRULY_TF1_ONLY.items()
                   if any(_matches(name, p) for p in patterns)]
        if not reasons:
            unclassified.append(name)
        elif len(reasons) > 1:
            twice.append((name, reasons))
        assert truly_tf1_only_group(name) == (reasons[0] if reasons else None)
    assert unclassified == [] and twice == []


def test_no_converted_name_is_listed_as_tf1_only():
    # `logging` (the module itself, `log = tf.logging`) stays; its members are kept
    listed = [name for name in sorted(TF1_ONLY) if _converted(name)
              and truly_tf1_only_group(name) is not None]
    assert listed == []


def test_audited_groups_are_converted():
    for old in IDENTICAL:
        assert RENAMES[f"tensorflow.{old}"] == f"tensorflow.{IDENTICAL[old]}"
        assert old in TF1_ONLY
    for name in AUDITED_EAGER_COMPAT:
        assert RENAMES[f"tensorflow.{name}"] == f"tensorflow.compat.v1.{name}"


def test_codes_md_lists_every_pattern_that_stays_tf1_only():
    what = REGISTRY["TS109"].what
    with open("docs/codes.md", encoding="utf-8") as f:
        doc = f.read()
    section = doc[doc.index("## TS109 tf1-only-api"):doc.index("## TS110")]
    for reason, patterns in TRULY_TF1_ONLY.items():
        assert reason[1:] in what
        for p in patterns:
            assert re.search(rf"`{re.escape(p)}`", section), p
    assert f"{len(IDENTICAL)} names" in section


def test_pipeline_seeded_v1_initializer_is_noted_unseeded_too():
    """The file spells no other TF1-only name: the screen must still run the check."""
    from tapeshift.migrate.engine.pipeline import migrate_source
    from tapeshift.migrate.engine.settings import reference_mode

    seeded = ("import tensorflow as tf\n"
              "W = tf.Variable(tf.truncated_normal_initializer(stddev=0.1, seed=1)([2, 3]))\n"
              "y = tf.reduce_sum(W)\n")
    unseeded = seeded.replace(", seed=1", "")
    for reference in (False, True):
        with reference_mode(reference):
            r = migrate_source(seeded, "s.py")
            # TS113 is informational: the seed is kept, the stream differs from TF1's
            assert r.mode == "tape"
            assert "tf.compat.v1.truncated_normal_initializer(stddev=0.1, seed=1)([2, 3])" \
                in r.output
            assert [(f.code, f.line, f.column, f.changes_numbers) for f in r.findings] \
                == [("TS113", 2, 17, True)]
            r = migrate_source(unseeded, "u.py")
            assert r.mode == "tape", [(f.code, f.message) for f in r.findings]
            assert "tf.compat.v1.truncated_normal_initializer(stddev=0.1)([2, 3])" in r.output
            assert [(f.code, f.line, f.changes_numbers) for f in r.findings] == [("TS116", 2, True)]


def test_pipeline_compat_v1_import_keeps_v1_logging_in_tape_form():
    from tapeshift.migrate.engine.pipeline import migrate_source

    source = ("import tensorflow.compat.v1 as tf\n"
              "tf.logging.warning('start')\n"
              "x = tf.constant(2.0)\n"
              "y = tf.ceil(x * 1.5)\n")
    r = migrate_source(source, "v.py")
    assert r.mode == "tape", [(f.code, f.message) for f in r.findings]
    assert r.output == ("import tensorflow as tf\n"
                        "tf.compat.v1.logging.warning('start')\n"
                        "x = tf.constant(2.0)\n"
                        "y = tf.math.ceil(x * 1.5)\n")
