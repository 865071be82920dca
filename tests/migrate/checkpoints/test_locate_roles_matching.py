"""The parts of `tapeshift checkpoint` that need no TensorFlow: finding a
checkpoint's files, telling optimizer slots from variables by name, map files
and the matching of old names to new ones."""

import json

import pytest

from tapeshift.migrate.checkpoints import CheckpointError
from tapeshift.migrate.checkpoints.locate import locate, read_state_file, step_of
from tapeshift.migrate.checkpoints.matching import Target, load_map, plan_conversion
from tapeshift.migrate.checkpoints.roles import (
    Entry,
    classify_name_based,
    classify_object_based,
    escape_component,
    split_key,
    summary,
    unescape_component,
)


def _fake_checkpoint(directory, prefix="model.ckpt-100", shards=1, meta=True):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{prefix}.index").write_bytes(b"index")
    for i in range(shards):
        (directory / f"{prefix}.data-{i:05d}-of-{shards:05d}").write_bytes(b"data")
    if meta:
        (directory / f"{prefix}.meta").write_bytes(b"meta")
    return directory / prefix


# -- locate -------------------------------------------------------------------

def test_a_prefix_an_index_a_data_file_and_a_meta_beside_its_index_name_one_checkpoint(tmp_path):
    prefix = _fake_checkpoint(tmp_path)
    for given in (prefix, f"{prefix}.index", f"{prefix}.data-00000-of-00001", f"{prefix}.meta"):
        found = locate(given)
        assert found.prefix == str(prefix)
        assert found.files == (f"{prefix}.index", f"{prefix}.data-00000-of-00001")
    assert step_of(str(prefix)) == 100 and step_of("model.ckpt") is None


def test_a_directory_gives_its_latest_checkpoint(tmp_path):
    _fake_checkpoint(tmp_path, "model.ckpt-5")
    _fake_checkpoint(tmp_path, "model.ckpt-40")
    # no state file: the highest step
    assert locate(tmp_path).prefix == str(tmp_path / "model.ckpt-40")
    # the state file wins; relative paths are relative to the directory
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-5"\n'
                                         'all_model_checkpoint_paths: "model.ckpt-5"\n')
    assert locate(tmp_path).prefix == str(tmp_path / "model.ckpt-5")


def test_an_absolute_path_in_a_copied_folder_means_the_copy(tmp_path):
    # tf.train.Saver writes absolute paths; a copied run folder still names the original
    original = _fake_checkpoint(tmp_path / "run", "model.ckpt-7")
    copy = tmp_path / "copy"
    _fake_checkpoint(copy, "model.ckpt-7")
    (copy / "checkpoint").write_text(f'model_checkpoint_path: "{original}"\n')
    assert read_state_file(str(copy)) == str(copy / "model.ckpt-7")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "checkpoint").write_text(f'model_checkpoint_path: "{original}"\n')
    assert locate(tmp_path / "elsewhere").prefix == str(original)


def test_a_state_file_path_with_escapes(tmp_path):
    _fake_checkpoint(tmp_path, 'odd "name"\u00e9-3')
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "odd \\"name\\"\\303\\251-3"\n')
    assert locate(tmp_path).prefix == str(tmp_path / 'odd "name"\u00e9-3')


@pytest.mark.parametrize("case, message", [
    ("missing", "no such checkpoint ({d}/model.ckpt-1.index does not exist)"),
    ("meta-only", "{d}/model.ckpt-1.meta: only the graph (.meta) of this checkpoint is there"),
    ("meta-path", "{d}/model.ckpt-1.meta: a .meta file holds the TF1 graph, not the weights"),
    ("no-data", "{d}/model.ckpt-1.data-00000-of-00001: missing"),
    ("missing-shard", "{d}/model.ckpt-1.data-00001-of-00002: missing"),
    ("empty-dir", "{d}: no checkpoint in this directory"),
    ("state-names-nothing", "its 'checkpoint' file names {d}/gone-3, but {d}/gone-3.index does not exist"),
    ("ambiguous-dir", "several checkpoints and no 'checkpoint' file"),
    ("not-a-prefix", "{d}/model.ckpt-1: not a checkpoint prefix"),
])
def test_bad_paths_name_the_file(tmp_path, case, message):
    d = tmp_path / "ck"
    d.mkdir()
    given = d / "model.ckpt-1"
    if case == "meta-only":
        (d / "model.ckpt-1.meta").write_bytes(b"meta")
    elif case == "meta-path":
        (d / "model.ckpt-1.meta").write_bytes(b"meta")
        given = d / "model.ckpt-1.meta"
    elif case == "no-data":
        _fake_checkpoint(d, "model.ckpt-1", shards=0)
    elif case == "missing-shard":
        _fake_checkpoint(d, "model.ckpt-1", shards=2)
        (d / "model.ckpt-1.data-00001-of-00002").unlink()
    elif case == "empty-dir":
        given = d
    elif case == "state-names-nothing":
        (d / "checkpoint").write_text('model_checkpoint_path: "gone-3"\n')
        given = d
    elif case == "ambiguous-dir":
        _fake_checkpoint(d, "a")
        _fake_checkpoint(d, "b")
        given = d
    elif case == "not-a-prefix":
        given.write_text("hello")
    with pytest.raises(CheckpointError) as err:
        locate(given)
    assert message.format(d=d) in str(err.value)


# -- roles --------------------------------------------------------------------

def _entries(spec):
    return [Entry(name, shape, dtype, name) for name, shape, dtype in spec]


def test_tf1_slots_optimizer_state_global_step_and_averages_by_name():
    entries = _entries([
        ("Actor/l1/kernel", (3, 4), "float32"),
        ("Actor/l1/kernel/Adam", (3, 4), "float32"),
        ("Actor/l1/kernel/Adam_1", (3, 4), "float32"),
        ("Actor/l1/kernel/ExponentialMovingAverage", (3, 4), "float32"),
        ("Critic/w", (4,), "float32"),
        ("Critic/w/Momentum", (4,), "float32"),
        ("Critic/w/critic_opt", (4,), "float32"),  # an optimizer made with name="critic_opt"
        ("Critic/w/RMSProp_1", (4,), "float32"),
        ("beta1_power", (), "float32"),
        ("Actor/beta2_power_1", (), "float32"),
        ("global_step", (), "int64"),
        ("conv/weights", (3, 3), "float32"),  # not a slot: no variable "conv" of that shape
        ("step", (), "float32"),
    ])
    classify_name_based(entries)
    got = {e.name: (e.role, e.slot_of, e.slot, e.optimizer) for e in entries}
    assert got == {
        "Actor/l1/kernel": ("variable", None, None, None),
        "Actor/l1/kernel/Adam": ("slot", "Actor/l1/kernel", "Adam", "Adam"),
        "Actor/l1/kernel/Adam_1": ("slot", "Actor/l1/kernel", "Adam_1", "Adam"),
        "Actor/l1/kernel/ExponentialMovingAverage": ("average", "Actor/l1/kernel", None, None),
        "Critic/w": ("variable", None, None, None),
        "Critic/w/Momentum": ("slot", "Critic/w", "Momentum", "Momentum"),
        "Critic/w/critic_opt": ("slot", "Critic/w", "critic_opt", "critic_opt"),
        "Critic/w/RMSProp_1": ("slot", "Critic/w", "RMSProp_1", "RMSProp"),
        "beta1_power": ("optimizer", None, None, "Adam"),
        "Actor/beta2_power_1": ("optimizer", None, None, "Adam"),
        "global_step": ("global-step", None, None, None),
        "conv/weights": ("variable", None, None, None),
        "step": ("variable", None, None, None),
    }
    assert summary(entries) == ("4 variables, 5 optimizer slots, 2 optimizer state variables, "
                                "1 global step, 1 moving average")
    assert entries[1].describe() == "slot Adam of Actor/l1/kernel (Adam)"


def test_tf2_slots_keras_optimizer_state_and_the_save_counter_by_object_path():
    def entry(key, shape=(2,), dtype="float32", name=None):
        path, attribute = split_key(key)
        return Entry(key, shape, dtype, name or path, path=path, attribute=attribute,
                     recorded_name=name is not None)
    entries = [
        entry("w/.ATTRIBUTES/VARIABLE_VALUE", name="scope/w"),
        entry("w/.OPTIMIZER_SLOT/opt/momentum/.ATTRIBUTES/VARIABLE_VALUE", name="scope/w/Momentum"),
        entry("optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE", (), "int64", "iteration"),
        entry("optimizer/_variables/1/.ATTRIBUTES/VARIABLE_VALUE", name="Adam/m/d/kernel"),
        entry("save_counter/.ATTRIBUTES/VARIABLE_VALUE", (), "int64", "save_counter"),
        entry("variables/Actor.Sw.SAdam/.ATTRIBUTES/VARIABLE_VALUE", name="Actor/w/Adam"),
        entry("variables/Actor.Sw/.ATTRIBUTES/VARIABLE_VALUE", name="Actor/w"),
        entry("iterator/.ATTRIBUTES/ITERATOR_STATE", (1,), "variant"),
    ]
    classify_object_based(entries)
    assert [(e.role, e.slot_of, e.slot, e.optimizer) for e in entries] == [
        ("variable", None, None, None),
        ("slot", "w", "momentum", "opt"),
        ("optimizer", None, None, "optimizer"),
        ("optimizer", None, None, "optimizer"),
        ("save-counter", None, None, None),
        ("slot", "Actor/w", "Adam", "Adam"),  # a converted checkpoint: by its recorded names
        ("variable", None, None, None),
        ("other", None, None, None),
    ]
    assert entries[1].describe() == "slot momentum of w (optimizer object 'opt')"


def test_object_path_escapes_round_trip():
    for name in ("Actor/eval/l1/kernel", "a.b", "x..S/y", ".S"):
        assert unescape_component(escape_component(name)) == name
    assert escape_component("Actor/w.x") == "Actor.Sw..x"


# -- map files ----------------------------------------------------------------

def test_json_and_toml_maps(tmp_path):
    table = {"Actor/eval/l1/kernel": "actor/l1/kernel", "Critic/": "critic/", "Target/": "",
             "old:0": "new:0"}
    (tmp_path / "m.json").write_text(json.dumps({**table, "drop": None}))
    (tmp_path / "m.toml").write_text('"Actor/eval/l1/kernel" = "actor/l1/kernel"\n"Critic/" = "critic/"\n'
                                     '"Target/" = ""\n"old:0" = "new:0"\n"drop" = ""\n')
    for name in ("m.json", "m.toml"):
        rules = load_map(tmp_path / name)
        assert rules.exact == {"Actor/eval/l1/kernel": "actor/l1/kernel", "old": "new", "drop": None}
        assert rules.prefixes == {"Critic/": "critic/", "Target/": None}


@pytest.mark.parametrize("name, text, message", [
    ("m.json", "[1, 2]", "a map is a JSON object"),
    ("m.json", "{", "not a valid JSON map"),
    ("m.toml", "a = ", "not a valid TOML map"),
    ("m.toml", "Actor.eval = 'x'", "'Actor' is a table, not a new name (in TOML, quote keys"),
    ("m.json", '{"a": 3}', "the new name of 'a' is 3, not a string"),
    ("m.json", '{"scope/": "new"}', "'scope/' renames a scope, so its new name must end with '/'"),
    ("m.json", '{"w": "scope/"}', "'w' is one variable, but its new name 'scope/' ends with '/'"),
])
def test_bad_maps_name_the_file(tmp_path, name, text, message):
    (tmp_path / name).write_text(text)
    with pytest.raises(CheckpointError) as err:
        load_map(tmp_path / name)
    assert str(err.value).startswith(str(tmp_path / name)) and message in str(err.value)
    with pytest.raises(CheckpointError, match="cannot read the map"):
        load_map(tmp_path / "missing.json")


# -- matching -----------------------------------------------------------------

CHECKPOINT = [("A/w", (3, 4), "float32"), ("A/w/Adam", (3, 4), "float32"),
              ("A/w/Adam_1", (3, 4), "float32"), ("A/b", (4,), "float32"),
              ("beta1_power", (), "float32"), ("global_step", (), "int64")]


def _checkpoint():
    entries = _entries(CHECKPOINT)
    classify_name_based(entries)
    return entries


def _map(tmp_path, table):
    (tmp_path / "m.json").write_text(json.dumps(table))
    return load_map(tmp_path / "m.json")


def test_a_map_alone_lists_the_output_and_slots_follow_their_variable(tmp_path):
    plan = plan_conversion(_checkpoint(), rules=_map(tmp_path, {"A/w": "net/w", "A/b": "net/b",
                                                                 "B/x": "net/x", "beta1_power": ""}))
    assert [(m.source.name, m.target) for m in plan.matched] == [
        ("A/w", "net/w"), ("A/w/Adam", "net/w/Adam"), ("A/w/Adam_1", "net/w/Adam_1"), ("A/b", "net/b")]
    assert [e.name for e in plan.unmatched] == ["global_step"]
    assert plan.missing == ["B/x"]
    assert [(e.name, why.split(" (")[0]) for e, why in plan.skipped] == [("beta1_power", "dropped by the map")]
    assert plan.blocking(allow_missing=True, allow_unmatched=True) is False
    assert plan.blocking(allow_missing=False, allow_unmatched=True) is True


def test_scope_rules_longest_first_and_exact_rules_win(tmp_path):
    rules = _map(tmp_path, {"A/": "x/", "A/w/": "y/", "A/w": "z", "beta1_power": "beta1_power",
                            "global_step": "global_step", "Nothing/": "n/"})
    plan = plan_conversion(_checkpoint(), rules=rules)
    assert {m.source.name: m.target for m in plan.matched} == {
        "A/w": "z", "A/w/Adam": "y/Adam", "A/w/Adam_1": "y/Adam_1", "A/b": "x/b",
        "beta1_power": "beta1_power", "global_step": "global_step"}
    assert plan.missing == ["Nothing/*"] and plan.unmatched == []


def test_two_variables_onto_one_name_is_an_error(tmp_path):
    with pytest.raises(CheckpointError, match="'A/w' and 'A/b' both become 'same'"):
        plan_conversion(_checkpoint(), rules=_map(tmp_path, {"A/w": "same", "A/b": "same"}))


def test_script_targets_unmatched_missing_mismatched_and_ambiguous():
    targets = [Target("A/w", (4, 3), "float32"), Target("A/b", (4,), "float64"),
               Target("A/w/Adam", (3, 4), "float32", count=2), Target("A/w/Adam_1", (3, 4), "float32"),
               Target("beta1_power", (), "float32"), Target("Other/v", (2,), "float32")]
    plan = plan_conversion(_checkpoint(), targets=targets)
    assert [m.source.name for m in plan.matched] == ["A/w/Adam_1", "beta1_power"]
    assert [e.name for e in plan.unmatched] == ["global_step"]
    assert plan.missing == ["Other/v"]
    assert [(m.source.name, why) for m, why in plan.mismatched] == [
        ("A/w", "shape (3, 4) in the checkpoint, (4, 3) in the script"),
        ("A/w/Adam", "the script made 2 variables named 'A/w/Adam': which one to restore is ambiguous"),
        ("A/b", "dtype float32 in the checkpoint, float64 in the script"),
    ]
    assert plan.blocking(allow_missing=True, allow_unmatched=True) is True  # mismatches always block


def test_skip_optimizer_leaves_optimizer_state_out_on_both_sides(tmp_path):
    targets = [Target("net/w", (3, 4), "float32"), Target("A/b", (4,), "float32"),
               Target("net/w/Adam", (3, 4), "float32"), Target("beta2_power", (), "float32"),
               Target("global_step", (), "int64")]
    plan = plan_conversion(_checkpoint(), targets=targets, rules=_map(tmp_path, {"A/w": "net/w"}),
                           skip_optimizer=True)
    assert {m.source.name: m.target for m in plan.matched} == {
        "A/w": "net/w", "A/b": "A/b", "global_step": "global_step"}  # a map beside a script only renames
    assert plan.unmatched == [] and plan.missing == [] and plan.mismatched == []
    assert sorted(e.name for e, _ in plan.skipped) == ["A/w/Adam", "A/w/Adam_1", "beta1_power"]


# -- without TensorFlow ---------------------------------------------------------

def test_without_tensorflow_the_command_says_how_to_install_it(tmp_path, block_imports):
    import subprocess
    import sys

    prefix = _fake_checkpoint(tmp_path)
    code = ("from tapeshift.migrate.commands.cli import main\n"
            f"raise SystemExit(main(['checkpoint', 'inspect', {str(prefix)!r}]))")
    p = subprocess.run([sys.executable, "-c", block_imports("tensorflow") + code],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("tapeshift checkpoint inspect: reading checkpoints needs TensorFlow, "
                               "which is not installed")
    assert "pip install 'tapeshift[tf]'" in p.stderr
