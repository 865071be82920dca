"""The random ops ``--align-random`` replaces, counts or leaves, and the stateless draws it makes.

Used by :mod:`tapeshift.migrate.legacy.align` in the child process; TensorFlow
is imported only when :class:`Raw` is made.
"""

from __future__ import annotations

# op type -> (gen_* module, function) of the stateful ops replaced by stateless ones
ALIGNED = {
    "RandomUniform": ("gen_random_ops", "random_uniform"),
    "RandomStandardNormal": ("gen_random_ops", "random_standard_normal"),
    "TruncatedNormal": ("gen_random_ops", "truncated_normal"),
    "RandomUniformInt": ("gen_random_ops", "random_uniform_int"),
    "RandomShuffle": ("gen_random_ops", "random_shuffle"),
    "Multinomial": ("gen_random_ops", "multinomial"),
    "RandomGamma": ("gen_random_ops", "random_gamma"),
    "RandomPoisson": ("gen_random_ops", "random_poisson"),
    "RandomPoissonV2": ("gen_random_ops", "random_poisson_v2"),
    "ParameterizedTruncatedNormal": ("gen_random_ops", "parameterized_truncated_normal"),
}
# random ops that cannot be made to draw from the stream: drawn as usual, recorded
UNALIGNED = {
    "gen_stateful_random_ops": ("non_deterministic_ints", "stateful_random_binomial",
                                "stateful_standard_normal", "stateful_standard_normal_v2",
                                "stateful_truncated_normal", "stateful_uniform",
                                "stateful_uniform_full_int", "stateful_uniform_int"),
    "gen_candidate_sampling_ops": ("all_candidate_sampler", "fixed_unigram_candidate_sampler",
                                   "learned_unigram_candidate_sampler",
                                   "log_uniform_candidate_sampler",
                                   "thread_unsafe_unigram_candidate_sampler",
                                   "uniform_candidate_sampler"),
    "gen_image_ops": ("sample_distorted_bounding_box", "sample_distorted_bounding_box_v2"),
    "gen_nn_ops": ("fractional_max_pool", "fractional_avg_pool"),
    "gen_dataset_ops": ("shuffle_dataset", "shuffle_dataset_v2", "shuffle_dataset_v3",
                        "shuffle_and_repeat_dataset", "shuffle_and_repeat_dataset_v2"),
    "gen_experimental_dataset_ops": ("random_dataset", "random_dataset_v2"),
}
# stateless ops: already keyed by their caller's seed; left alone, counted when the script calls them
STATELESS_MODULES = ("gen_stateless_random_ops", "gen_stateless_random_ops_v2")
NOT_DRAWS = {"stateless_random_get_alg", "stateless_random_get_key_counter",
             "stateless_random_get_key_counter_alg"}


def camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


class Raw:
    """The stateless op wrappers as they were before anything wrapped them, and the adapters."""

    def __init__(self) -> None:
        from tensorflow.python.framework import constant_op, dtypes, ops
        from tensorflow.python.ops import (
            array_ops,
            gen_stateless_random_ops,
            gen_stateless_random_ops_v2,
            random_ops_util,
        )

        self.ops, self.dtypes, self.constant_op, self.array_ops = ops, dtypes, constant_op, array_ops
        try:
            from tensorflow.python.ops.array_ops_stack import stack
        except ImportError:  # pragma: no cover - TensorFlow before 2.13
            stack = array_ops.stack
        self.stack = stack
        self.v1, self.v2 = gen_stateless_random_ops, gen_stateless_random_ops_v2
        # captured now: the random-op watcher wraps the module attributes later
        self.fn = {name: getattr(mod, name) for mod in (self.v1, self.v2)
                   for name in dir(mod) if name.startswith("stateless_")}
        # what tf.random.stateless_* use by default ("auto_select")
        self.alg = random_ops_util.convert_alg_to_int("auto_select")

    def key_counter(self, key):
        return self.fn["stateless_random_get_key_counter"](key, name="tapeshift_align_key_counter")

    def full_shape(self, shape, param):
        """``shape + param.shape``: what the stateful gamma/poisson ops return."""
        shape = self.ops.convert_to_tensor(shape)
        return self.array_ops.concat([shape, self.array_ops.shape(param, out_type=shape.dtype)], 0)

    # one adapter per op type: (bound arguments of the stateful wrapper, key, op name) -> tensor
    def RandomUniform(self, a, key, name):
        k, c = self.key_counter(key)
        return self.fn["stateless_random_uniform_v2"](a["shape"], key=k, counter=c, dtype=a["dtype"],
                                                      alg=self.alg, name=name)

    def RandomStandardNormal(self, a, key, name):
        k, c = self.key_counter(key)
        return self.fn["stateless_random_normal_v2"](a["shape"], key=k, counter=c, dtype=a["dtype"],
                                                     alg=self.alg, name=name)

    def TruncatedNormal(self, a, key, name):
        k, c = self.key_counter(key)
        return self.fn["stateless_truncated_normal_v2"](a["shape"], key=k, counter=c,
                                                        dtype=a["dtype"], alg=self.alg, name=name)

    def RandomUniformInt(self, a, key, name):
        k, c = self.key_counter(key)
        return self.fn["stateless_random_uniform_int_v2"](a["shape"], key=k, counter=c, alg=self.alg,
                                                          minval=a["minval"], maxval=a["maxval"],
                                                          name=name)

    def RandomShuffle(self, a, key, name):
        k, c = self.key_counter(key)
        return self.fn["stateless_shuffle"](a["value"], key=k, counter=c, alg=self.alg, name=name)

    def Multinomial(self, a, key, name):
        return self.fn["stateless_multinomial"](a["logits"], a["num_samples"], key,
                                                output_dtype=a["output_dtype"], name=name)

    def RandomGamma(self, a, key, name):
        k, c = self.key_counter(key)
        alpha = self.ops.convert_to_tensor(a["alpha"])
        return self.fn["stateless_random_gamma_v3"](self.full_shape(a["shape"], alpha), key=k,
                                                    counter=c, alg=self.alg, alpha=alpha, name=name)

    def RandomPoissonV2(self, a, key, name):
        rate = self.ops.convert_to_tensor(a["rate"])
        return self.fn["stateless_random_poisson"](self.full_shape(a["shape"], rate), key, rate,
                                                   dtype=a["dtype"], name=name)

    def RandomPoisson(self, a, key, name):
        rate = self.ops.convert_to_tensor(a["rate"])
        return self.fn["stateless_random_poisson"](self.full_shape(a["shape"], rate), key, rate,
                                                   dtype=rate.dtype, name=name)

    def ParameterizedTruncatedNormal(self, a, key, name):
        return self.fn["stateless_parameterized_truncated_normal"](
            a["shape"], key, a["means"], a["stdevs"], a["minvals"], a["maxvals"], name=name)
