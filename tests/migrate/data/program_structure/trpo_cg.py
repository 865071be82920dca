"""TRPO-style natural gradient: conjugate gradient on a fed Hessian-vector product."""
import numpy as np
import tensorflow as tf

OBS, ACT = 4, 3


def flat_grad(f, params):
    return tf.concat([tf.reshape(g, [-1]) for g in tf.gradients(f, params)], axis=0)


obs = tf.placeholder(tf.float32, [None, OBS])
act = tf.placeholder(tf.int32, [None])
adv = tf.placeholder(tf.float32, [None])
old_logits = tf.placeholder(tf.float32, [None, ACT])
w = tf.Variable(np.linspace(-0.5, 0.5, OBS * ACT).reshape(OBS, ACT).astype(np.float32))
b = tf.Variable(np.zeros(ACT, np.float32))
params = [w, b]
logits = tf.matmul(obs, w) + b
logp = tf.nn.log_softmax(logits)
logp_a = tf.reduce_sum(tf.one_hot(act, ACT) * logp, axis=1)
surr = tf.reduce_mean(tf.exp(logp_a) * adv)
old_p = tf.nn.softmax(old_logits)
kl = tf.reduce_mean(tf.reduce_sum(old_p * (tf.nn.log_softmax(old_logits) - logp), axis=1))
pg = flat_grad(surr, params)
v = tf.placeholder(tf.float32, [OBS * ACT + ACT])
grad_kl = flat_grad(kl, params)
hvp = flat_grad(tf.reduce_sum(grad_kl * v), params)


def conjugate_gradient(Avp, g, iters=10):
    x = np.zeros_like(g)
    r = g.copy()
    p = g.copy()
    rr = r.dot(r)
    for _ in range(iters):
        Ap = Avp(p)
        alpha = rr / (p.dot(Ap) + 1e-8)
        x += alpha * p
        r -= alpha * Ap
        new_rr = r.dot(r)
        p = r + new_rr / rr * p
        rr = new_rr
    return x


rng = np.random.RandomState(0)
o = rng.randn(16, OBS).astype(np.float32)
a = rng.randint(0, ACT, 16)
ad = rng.randn(16).astype(np.float32)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    feed = {obs: o, act: a, adv: ad}
    old = sess.run(logits, feed)
    g = sess.run(pg, feed)
    step = conjugate_gradient(lambda p: sess.run(hvp, {**feed, old_logits: old, v: p}) + 0.1 * p, g)
    print(g, step)
