"""TF1 gradient idioms from the survey, in one graph/session script.

Used by test_acceptance.py: run with TF1 semantics and, migrated,
under plain TF2; both must print the same numbers.
"""
import numpy as np
import tensorflow as tf


def layer_grads(x_value):
    # gradients inside a function body
    W1 = tf.Variable(np.array([[0.5, -1.0], [2.0, 0.25]]), dtype=tf.float32)
    inp = tf.constant(x_value, dtype=tf.float32)
    act = tf.nn.relu(tf.matmul(inp, W1))
    out = tf.reduce_sum(tf.log(1.0 + act * act))
    return tf.gradients(out, [W1, inp])


W = tf.Variable(np.array([[1.0, 2.0], [3.0, 4.0]]), dtype=tf.float32)
b = tf.Variable(np.array([0.5, 0.5]), dtype=tf.float32)
unused = tf.Variable(1.0)
x = tf.constant(np.array([[0.1, 0.2], [0.3, 0.4]]), dtype=tf.float32)
labels = tf.constant(np.array([1, 0]), dtype=tf.int32)
v = tf.constant(np.array([[1.0, 0.0], [0.0, 1.0]]), dtype=tf.float32)

scale = tf.Variable(1.5, trainable=False)
h = tf.matmul(x, W) * scale + b
# a gradient taken before the rest of the forward computation
g_early = tf.gradients(h, b)[0]
target = tf.stop_gradient(h * 0.5)
y = tf.tanh(h)
ce = tf.reduce_mean(tf.square(y - target)) + tf.reduce_mean(tf.to_float(labels))
loss = ce + 0.01 * tf.reduce_sum(tf.square(W))

# input gradient (x is not a variable: tape.watch)
g_x, = tf.gradients(loss, x)
# list of sources holding None
grads = tf.gradients(loss, [W, b, unused])
# grad_ys as the positional third argument, negated
g_h_vjp = tf.gradients(h, W, -tf.ones_like(h))[0]
# several targets are summed
g_sum = tf.gradients([loss, ce], W)[0]
# second order: Hessian-vector product through the input gradient
gv = tf.reduce_sum(g_x * v)
hvp = tf.gradients(gv, x)[0]
# a variable that is not trainable (needs tape.watch)
g_scale = tf.gradients(loss, scale)[0]

sess = tf.InteractiveSession()
sess.run(tf.initialize_all_variables())
present = [g for g in grads if g is not None]
print(sess.run(present))
print(sess.run({"gx": g_x, "vjp": g_h_vjp}))
print(sess.run((g_sum, hvp)))
print(loss.eval())
print(sess.run([g_early, g_scale]))
print(grads[2] is None)
gW1, ginp = layer_grads(np.array([[1.0, -2.0]]))
sess.run(tf.global_variables_initializer())
print(sess.run(gW1), sess.run(ginp))
sess.close()
