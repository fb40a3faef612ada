"""Windows of whole words, in-graph: the windows `official_bert.data.tagging_dataset.build_windows` packs for the
entity tagger, with dense core ops only (no loop).

A text's words go into windows in order; a window holds whole words up to `budget` pieces (a word longer than that
is cut to `budget` pieces), and the next window starts at the first word that does not fit. Where one window
starting at word `w` ends is known for every `w` at once; which words start a window follows by jumping from the
first word, `next`, `next(next)`, ..., computed for every jump count at once by doubling (`levels` static steps).

Examples:

>>> window, position = word_windows(sizes, text_ends, budget=126)
>>> # word w goes to window window[w] (windows numbered over the batch), at packed position position[w]
"""

import tensorflow as tf

# Doubling steps: enough for 2**LEVELS - 1 windows in one request.
LEVELS = 20


def word_windows(sizes, text_ends, budget):
    """The window of each word and its first piece's position in it, as `build_windows` packs them.

    Args:
        sizes: int64 [words], the pieces each word packs (`min(pieces, budget)`, at least 1), words of the batch in
            order, text after text.
        text_ends: int64 [words], one past the last word of the word's text (the index of the next text's first word).
        budget: Python int, the pieces a window holds.

    Returns:
        `(window, offset, starts)`: int64 [words] the window of each word (0, 1, ... over the batch, in order), int64
        [words] its first piece's index among its window's pieces, and bool [words], True where a word starts a
        window.
    """
    num_words = tf.shape(sizes, out_type=tf.int64)[0]
    before = tf.cumsum(sizes, exclusive=True)  # (words,) pieces of the batch before each word
    after = before + sizes  # (words,) ... up to its end
    # next[w]: the first word that does not fit in a window starting at w (or its text's end). A window holds at
    # most `budget` words (each packs at least a piece), so only the next `budget` words are compared.
    reach = tf.range(min(budget, 1 << 30), dtype=tf.int64)[None, :]  # (1, budget)
    word = tf.range(num_words)[:, None]  # (words, 1)
    later = tf.minimum(word + reach, tf.maximum(num_words - 1, 0))  # (words, budget), clipped into range
    fits = tf.logical_and(word + reach < text_ends[:, None],
                          tf.gather(after, later) - before[:, None] <= budget)  # (words, budget), a prefix
    following = tf.range(num_words) + tf.reduce_sum(tf.cast(fits, tf.int64), axis=1)  # (words,)
    # jump[j][w]: 2**j jumps from w; the end (num_words) jumps to itself.
    jump = tf.concat([following, tf.reshape(num_words, [1])], axis=0)  # (words + 1,)
    count = tf.range(num_words + 1)  # (words + 1,) jump counts from the first word
    node = tf.zeros_like(count)
    for level in range(LEVELS):
        take = tf.math.floormod(count, 2 << level) >= (1 << level)  # bit `level` of the count
        node = tf.where(take, tf.gather(jump, node), node)
        jump = tf.gather(jump, jump)
    starts = tf.scatter_nd(node[:, None], tf.ones_like(node), tf.reshape(num_words + 1, [1]))[:-1] > 0  # (words,)
    window = tf.cumsum(tf.cast(starts, tf.int64)) - 1  # (words,)
    first_word = tf.gather(tf.reshape(tf.where(starts), [-1]), window)  # (words,) its window's first word
    return window, before - tf.gather(before, first_word), starts
