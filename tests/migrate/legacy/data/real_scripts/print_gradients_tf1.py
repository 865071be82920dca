"""Gradients of a small polynomial, printed before and after running them (TF1 tutorial style)."""
import tensorflow as tf

x = tf.constant(3.0, name="x")
w = tf.constant([1.5, -2.0], name="w")
y = x * x + 2.0 * x
z = tf.reduce_sum(w * y)

gradients = tf.gradients(y, [x])
grad_w = tf.gradients(z, w)
print(gradients)
print("grad of z wrt w:", grad_w)
print(z)

with tf.Session() as sess:
    g = sess.run(gradients)
    print(g)
    gw, zv = sess.run([grad_w, z])
    print("dz/dw =", gw)
    print("z =", zv)
