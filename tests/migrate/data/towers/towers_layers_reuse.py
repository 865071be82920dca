"""A classifier trained on two towers: tf.layers shared by reuse_variables() (CIFAR-10 style), Momentum."""
import numpy as np
import tensorflow as tf

NUM_GPUS = 2
BATCH = 32
CLASSES = 3

rng = np.random.RandomState(1)
features = rng.randn(128, 8).astype(np.float32)
labels = rng.randint(0, CLASSES, 128).astype(np.int64)

images = tf.placeholder(tf.float32, [None, 8], name="images")
targets = tf.placeholder(tf.int64, [None], name="targets")


def tower_loss(inputs, truth):
    hidden = tf.layers.dense(inputs, 16, activation=tf.nn.relu, name="hidden")
    logits = tf.layers.dense(hidden, CLASSES, name="logits")
    xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=truth, logits=logits)
    return tf.reduce_mean(xent)


def average_gradients(tower_grads):
    average_grads = []
    for grad_and_vars in zip(*tower_grads):
        grad = tf.reduce_mean(tf.stack([g for g, _ in grad_and_vars]), 0)
        average_grads.append((grad, grad_and_vars[0][1]))
    return average_grads


global_step = tf.Variable(0, trainable=False, name="global_step")
opt = tf.train.MomentumOptimizer(0.05, 0.9)
image_splits = tf.split(images, NUM_GPUS)
target_splits = tf.split(targets, NUM_GPUS)
tower_grads = []
with tf.variable_scope(tf.get_variable_scope()):  # the reuse below ends with this scope
    for i in range(NUM_GPUS):
        with tf.device("/gpu:%d" % i):
            with tf.name_scope("tower_%d" % i):
                loss = tower_loss(image_splits[i], target_splits[i])
                tf.get_variable_scope().reuse_variables()
                grads = opt.compute_gradients(loss, colocate_gradients_with_ops=True)
                tower_grads.append(grads)
train_op = opt.apply_gradients(average_gradients(tower_grads), global_step=global_step)

config = tf.ConfigProto(allow_soft_placement=True, log_device_placement=False)
sess = tf.Session(config=config)
sess.run(tf.global_variables_initializer())
for step in range(6):
    start = (step * BATCH) % 128
    _, loss_value = sess.run([train_op, loss], feed_dict={images: features[start:start + BATCH],
                                                          targets: labels[start:start + BATCH]})
    print(step, loss_value)
final_loss = sess.run(loss, feed_dict={images: features[:BATCH], targets: labels[:BATCH]})
print("final", final_loss)
sess.close()
