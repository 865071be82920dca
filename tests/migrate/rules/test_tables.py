"""The rename tables and the TF1-only list, checked against the installed TensorFlow.

As ``tf_upgrade_v2_test.py`` checks its specs against ``tf.compat.v1``: every
old name exists in ``tf.compat.v1``, every new name in TF2 ``tf``.
"""

import types

import pytest

pytestmark = pytest.mark.tf

tf = pytest.importorskip("tensorflow")

from tapeshift.migrate.rules.compat_v1_imports import BEHAVIOUR_SWITCHES  # noqa: E402
import inspect  # noqa: E402

from tapeshift.migrate.rules.renames import CASTS, KEYWORDS, PARAMETERS, RENAMES  # noqa: E402
from tapeshift.migrate.rules.session import INITIALIZERS, PLACEHOLDERS, SESSIONS  # noqa: E402
from tapeshift.migrate.engine.tf1_api_table import TF1_ONLY  # noqa: E402


def _resolve(root, dotted):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _short(full):
    assert full.startswith("tensorflow.")
    return full[len("tensorflow."):]


@pytest.mark.parametrize("old", sorted(RENAMES))
def test_rename_old_name_exists_in_compat_v1(old):
    _resolve(tf.compat.v1, _short(old))


@pytest.mark.parametrize("old", sorted(RENAMES))
def test_rename_new_name_exists_in_tf2(old):
    _resolve(tf, _short(RENAMES[old]))


def _signature(root, dotted):
    try:
        return inspect.signature(_resolve(root, dotted))
    except (TypeError, ValueError):
        return None  # a constant (tf.VERSION, tf.logging.INFO)


# (functions and classes: absl's FLAGS object is callable too, and parses sys.argv
# when its signature is asked)
CALLABLE_RENAMES = sorted(old for old in RENAMES if inspect.isroutine(_resolve(tf.compat.v1, _short(old)))
                          or inspect.isclass(_resolve(tf.compat.v1, _short(old))))


def test_renames_without_a_signature_are_constants():
    assert [old for old in CALLABLE_RENAMES if _signature(tf.compat.v1, _short(old)) is None] == []


@pytest.mark.parametrize("old", CALLABLE_RENAMES)
def test_renamed_call_passes_its_arguments_to_the_right_parameters(old):
    """Every old parameter has a new namesake (KEYWORDS); where positions moved,
    PARAMETERS holds both orders, so the rule passes those arguments by name."""
    before = list(_signature(tf.compat.v1, _short(old)).parameters)
    after = _signature(tf, _short(RENAMES[old])).parameters
    renamed = KEYWORDS.get(old, {})
    assert [renamed.get(p, p) for p in before if renamed.get(p, p) not in after] == []
    positions_moved = [renamed.get(p, p) for p in before] != list(after)[:len(before)]
    if positions_moved:
        assert PARAMETERS.get(old) == (tuple(before), tuple(after)), old
    else:
        assert old not in PARAMETERS
        for p in list(after)[len(before):]:
            assert after[p].default is not inspect.Parameter.empty, p


def test_keyword_renames_are_for_renamed_names():
    assert set(KEYWORDS) <= set(RENAMES) and set(PARAMETERS) <= set(RENAMES)


@pytest.mark.parametrize("old", sorted(CASTS))
def test_cast_old_name_exists_and_dtype_exists(old):
    _resolve(tf.compat.v1, _short(old))
    assert isinstance(getattr(tf, CASTS[old]), tf.dtypes.DType)


def test_old_names_really_moved():
    """A rename entry whose old name still exists in TF2 would be pointless."""
    stayed = [old for old in RENAMES if hasattr(tf, _short(old))]
    assert stayed == []


def test_handled_names_are_tf1_names():
    for name in (*SESSIONS, *INITIALIZERS, *PLACEHOLDERS, *BEHAVIOUR_SWITCHES):
        _resolve(tf.compat.v1, name)


def regenerate_tf1_only():
    """The TF1-only names of the installed TensorFlow (see tf1_only_table.py)."""
    v1 = tf.compat.v1
    out = set()
    for name in dir(v1):
        if name.startswith("_"):
            continue
        if not hasattr(tf, name):
            out.add(name)
            continue
        a, b = getattr(v1, name), getattr(tf, name)
        if isinstance(a, types.ModuleType) and isinstance(b, types.ModuleType) and name != "compat":
            out.update(f"{name}.{sub}" for sub in dir(a)
                       if not sub.startswith("_") and not hasattr(b, sub))
    return out


def test_tf1_only_table_matches_installed_tensorflow():
    current = regenerate_tf1_only()
    assert sorted(TF1_ONLY - current) == []  # every listed name is TF1-only
    assert sorted(current - TF1_ONLY) == []  # and none is missing


# -- the TS109 audit (issue #17) ------------------------------------------------

from tapeshift.migrate.rules.renames import AUDITED_EAGER_COMPAT, IDENTICAL, SEEDED_INITIALIZERS  # noqa: E402
from tapeshift.migrate.rules.tf1_only import handled, tf1_only  # noqa: E402


@pytest.mark.parametrize("old", sorted(IDENTICAL))
def test_identical_rename_is_the_same_object(old):
    """The proof that a rename keeps every default and number: both names are
    bound to one Python object."""
    assert _resolve(tf.compat.v1, old) is _resolve(tf, IDENTICAL[old])


@pytest.mark.parametrize("name", sorted(AUDITED_EAGER_COMPAT))
def test_audited_eager_compat_names_are_tf1_only(name):
    _resolve(tf.compat.v1, name)
    assert tf1_only(name, strict=True) is not None  # TF2 has no such name
    assert tf1_only(name) is None  # and it no longer blocks tape form


@pytest.mark.parametrize("name", sorted(SEEDED_INITIALIZERS))
def test_seeded_initializer_seed_index(name):
    import inspect

    params = list(inspect.signature(_resolve(tf.compat.v1, name).__init__).parameters)[1:]
    assert params[SEEDED_INITIALIZERS[name]] == "seed"


def test_collection_readers_stay_tf1_only():
    """tf.losses.* write the LOSSES collection in a graph; what reads it is not converted."""
    for name in ("losses.get_total_loss", "losses.get_losses", "losses.get_regularization_loss",
                 "losses.add_loss", "losses.compute_weighted_loss", "get_collection",
                 "add_to_collection", "GraphKeys.LOSSES", "assign", "assign_add"):
        assert tf1_only(name) is not None, name
        assert name not in handled()
