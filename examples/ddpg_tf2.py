"""A DDPG actor-critic update, TF2 form.

The TF2 counterpart of ``ddpg_tf1.py``, in the shape the codemod produces for
fed graphs and train ops: each distinct set of fetches is a function of the fed
values; dQ/da is a tape watching the fed action; the actor's ``grad_ys`` is
the tape's ``output_gradients``; the optimizer created inline is a
module-level name, created once. Compare the two with:

    tapeshift verify examples/ddpg_tf1.py examples/ddpg_tf2.py
"""
import numpy as np
import tensorflow as tf

S_DIM, A_DIM, HIDDEN, BATCH, GAMMA = 3, 2, 8, 6, 0.9
rng = np.random.RandomState(2)
states = rng.randn(5, BATCH, S_DIM).astype(np.float32)
next_states = rng.randn(5, BATCH, S_DIM).astype(np.float32)
rewards = rng.randn(5, BATCH, 1).astype(np.float32)

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

actor_optimizer = tf.compat.v1.train.AdamOptimizer(0.01)

critic_opt = tf.compat.v1.train.AdamOptimizer(0.01)


def run_actor_out(state):
    state = tf.convert_to_tensor(state, tf.float32)
    actor_hidden = tf.nn.relu(tf.matmul(state, actor_W1) + actor_b1)
    actor_out = tf.tanh(tf.matmul(actor_hidden, actor_W2) + actor_b2)
    return actor_out.numpy()


def run_dq_da(state, action):
    state = tf.convert_to_tensor(state, tf.float32)
    action = tf.convert_to_tensor(action, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(action)
        critic_hidden = tf.nn.relu(tf.matmul(state, critic_Ws) + tf.matmul(action, critic_Wa) + critic_b1)
        q = tf.matmul(critic_hidden, critic_W2) + critic_b2
    dq_da = tape.gradient(q, action)
    return dq_da.numpy()


def run_actor_train_op(state, dq_da_ph):
    state = tf.convert_to_tensor(state, tf.float32)
    dq_da_ph = tf.convert_to_tensor(dq_da_ph, tf.float32)
    with tf.GradientTape() as tape:
        actor_hidden = tf.nn.relu(tf.matmul(state, actor_W1) + actor_b1)
        actor_out = tf.tanh(tf.matmul(actor_hidden, actor_W2) + actor_b2)
    actor_grads = tape.gradient(actor_out, actor_params, output_gradients=-dq_da_ph)
    actor_train_op = actor_optimizer.apply_gradients(zip(actor_grads, actor_params))
    return None


def run_q(state, action):
    state = tf.convert_to_tensor(state, tf.float32)
    action = tf.convert_to_tensor(action, tf.float32)
    critic_hidden = tf.nn.relu(tf.matmul(state, critic_Ws) + tf.matmul(action, critic_Wa) + critic_b1)
    q = tf.matmul(critic_hidden, critic_W2) + critic_b2
    return q.numpy()


def run_critic_train_op_critic_loss_q(state, action, target_q):
    state = tf.convert_to_tensor(state, tf.float32)
    action = tf.convert_to_tensor(action, tf.float32)
    target_q = tf.convert_to_tensor(target_q, tf.float32)
    with tf.GradientTape() as tape:
        critic_hidden = tf.nn.relu(tf.matmul(state, critic_Ws) + tf.matmul(action, critic_Wa) + critic_b1)
        q = tf.matmul(critic_hidden, critic_W2) + critic_b2
        critic_loss = tf.reduce_mean(tf.square(target_q - q))
    critic_train_op = critic_opt.apply_gradients(
        zip(tape.gradient(critic_loss, critic_params), critic_params))
    return [None, critic_loss.numpy(), q.numpy()]


for step in range(5):
    acted = run_actor_out(state=states[step])
    dq_da_value = run_dq_da(state=states[step], action=acted)
    run_actor_train_op(state=states[step], dq_da_ph=dq_da_value)

    next_acted = run_actor_out(state=next_states[step])
    next_q = run_q(state=next_states[step], action=next_acted)
    targets = rewards[step] + GAMMA * next_q
    _, critic_loss_value, q_value = run_critic_train_op_critic_loss_q(
        state=states[step], action=acted, target_q=targets)
    print(step, critic_loss_value, q_value.mean(), np.linalg.norm(acted),
          np.abs(dq_da_value).mean())
