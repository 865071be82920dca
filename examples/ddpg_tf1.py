"""A DDPG actor-critic update, TF1 style.

The critic Q(s, a) and the actor mu(s) are plain ``tf.matmul`` layers on
``tf.Variable`` weights. Each step acts (``mu(s)``), takes dQ/da at the actor's
action (a numpy round trip through a placeholder), updates the actor along
``-dQ/da`` with ``tf.gradients(actor_out, actor_params, -dq_da_ph)`` (grad_ys)
and Adam, then moves the critic toward ``r + GAMMA * Q(s', mu(s'))``. Run it on
TF2, and compare it with its hand-written TF2 form (where the tape computes every
gradient before any update, as ``gate_gradients=True`` does here), with:

    tapeshift run-legacy examples/ddpg_tf1.py
    tapeshift verify examples/ddpg_tf1.py examples/ddpg_tf2.py
"""
import numpy as np
import tensorflow as tf

S_DIM, A_DIM, HIDDEN, BATCH, GAMMA = 3, 2, 8, 6, 0.9
rng = np.random.RandomState(2)
states = rng.randn(5, BATCH, S_DIM).astype(np.float32)
next_states = rng.randn(5, BATCH, S_DIM).astype(np.float32)
rewards = rng.randn(5, BATCH, 1).astype(np.float32)

state = tf.placeholder(tf.float32, shape=[None, S_DIM], name="state")
action = tf.placeholder(tf.float32, shape=[None, A_DIM], name="action")
target_q = tf.placeholder(tf.float32, shape=[None, 1], name="target_q")
dq_da_ph = tf.placeholder(tf.float32, shape=[None, A_DIM], name="dq_da_ph")

actor_W1 = tf.Variable(0.5 * rng.randn(S_DIM, HIDDEN), dtype=tf.float32)
actor_b1 = tf.Variable(np.zeros(HIDDEN), dtype=tf.float32)
actor_W2 = tf.Variable(0.5 * rng.randn(HIDDEN, A_DIM), dtype=tf.float32)
actor_b2 = tf.Variable(np.zeros(A_DIM), dtype=tf.float32)
critic_Ws = tf.Variable(0.5 * rng.randn(S_DIM, HIDDEN), dtype=tf.float32)
critic_Wa = tf.Variable(0.5 * rng.randn(A_DIM, HIDDEN), dtype=tf.float32)
critic_b1 = tf.Variable(np.zeros(HIDDEN), dtype=tf.float32)
critic_W2 = tf.Variable(0.5 * rng.randn(HIDDEN, 1), dtype=tf.float32)
critic_b2 = tf.Variable(np.zeros(1), dtype=tf.float32)
actor_params = [actor_W1, actor_b1, actor_W2, actor_b2]
critic_params = [critic_Ws, critic_Wa, critic_b1, critic_W2, critic_b2]

actor_hidden = tf.nn.relu(tf.matmul(state, actor_W1) + actor_b1)
actor_out = tf.tanh(tf.matmul(actor_hidden, actor_W2) + actor_b2)

critic_hidden = tf.nn.relu(tf.matmul(state, critic_Ws) + tf.matmul(action, critic_Wa) + critic_b1)
q = tf.matmul(critic_hidden, critic_W2) + critic_b2
critic_loss = tf.reduce_mean(tf.square(target_q - q))

dq_da = tf.gradients(q, action)[0]
# gate_gradients=True: without it ApplyAdam may update actor_W2 in place before the
# backprop into the hidden layer has read it (a race; run to run differences)
actor_grads = tf.gradients(actor_out, actor_params, -dq_da_ph, gate_gradients=True)
actor_train_op = tf.train.AdamOptimizer(0.01).apply_gradients(zip(actor_grads, actor_params))

critic_opt = tf.train.AdamOptimizer(0.01)
critic_train_op = critic_opt.minimize(critic_loss, var_list=critic_params)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(5):
        acted = sess.run(actor_out, feed_dict={state: states[step]})
        dq_da_value = sess.run(dq_da, feed_dict={state: states[step], action: acted})
        sess.run(actor_train_op, feed_dict={state: states[step], dq_da_ph: dq_da_value})

        next_acted = sess.run(actor_out, feed_dict={state: next_states[step]})
        next_q = sess.run(q, feed_dict={state: next_states[step], action: next_acted})
        targets = rewards[step] + GAMMA * next_q
        _, critic_loss_value, q_value = sess.run(
            [critic_train_op, critic_loss, q],
            feed_dict={state: states[step], action: acted, target_q: targets})
        print(step, critic_loss_value, q_value.mean(), np.linalg.norm(acted),
              np.abs(dq_da_value).mean())
