"""A text stream that records what is written and says whether it is a terminal."""


class RecordingStream:
    """``write``/``flush``/``isatty`` like a terminal (``tty=True``) or a pipe; ``text`` holds the output."""

    def __init__(self, tty):
        self.tty, self.text = tty, ""

    def isatty(self):
        return self.tty

    def write(self, s):
        self.text += s

    def flush(self):
        pass
