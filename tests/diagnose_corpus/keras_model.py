"""A compiled Keras model for `pipebench diagnose --model`: a small embedding model on the DeepFM features."""
import tensorflow as tf


def build_model(field_size=39, feature_size=200_000):
    ids = tf.keras.Input(shape=(field_size,), dtype="int64", name="feat_ids")
    values = tf.keras.Input(shape=(field_size,), dtype="float32", name="feat_vals")
    embedded = tf.keras.layers.Embedding(feature_size, 8)(ids)
    weighted = embedded * tf.keras.layers.Reshape((field_size, 1))(values)
    hidden = tf.keras.layers.Dense(32, activation="relu")(tf.keras.layers.Flatten()(weighted))
    model = tf.keras.Model({"feat_ids": ids, "feat_vals": values}, tf.keras.layers.Dense(1, activation="sigmoid")(hidden))
    model.compile(optimizer="adam", loss="binary_crossentropy")
    return model
