"""The public CST toolkit: walking trees, TensorFlow names, data flow,
statements and positions. Rules and checks use these; nothing here knows a rule."""
