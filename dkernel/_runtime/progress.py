"""Progress shown on stderr: a line rewritten in place on a terminal, a plain line every few seconds otherwise.

Dask is imported only to format times and to follow a local-scheduler run,
so that work without Dask (a fit in memory) shows its progress without it.
"""

import sys
import time

__all__ = ["StatusLine", "TextProgress", "local_progress"]

_PROGRESS_INTERVAL = 10.0  # seconds between progress lines when the output is not a terminal


class StatusLine:
    """A status that changes in place: one line rewritten on a terminal, a plain line every few seconds otherwise.

    ``show(text)`` is cheap to call often (it prints at most every
    ``interval`` seconds; :meth:`due` tells whether it would, so a caller can
    skip building the text); ``close(text)`` prints the final line once: off
    a terminal, not at all when it is the line printed last.
    """

    def __init__(self, stream=None, enabled=True, interval=_PROGRESS_INTERVAL):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = bool(enabled)
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = 0.1 if self.tty else float(interval)
        self.started = time.monotonic()
        self._shown = None
        self._width = 0
        self._last = None

    @property
    def elapsed(self):
        """Seconds since the status line was created."""
        return time.monotonic() - self.started

    def due(self):
        """Whether :meth:`show` would print now."""
        return self.enabled and (self._shown is None or time.monotonic() - self._shown >= self.interval)

    def show(self, text, force=False):
        """Print ``text`` when :meth:`due` (or ``force``): over the previous one on a terminal."""
        if not self.enabled or not (force or self.due()):
            return
        self._shown = time.monotonic()
        self._write(text, final=False)

    def close(self, text):
        """Print the final line ``text`` (ending the updating line on a terminal); later calls print nothing.

        ``text`` None ends the status with the line printed last; off a terminal, the line printed last is
        not printed again.
        """
        if not self.enabled:
            return
        self.enabled = False
        if text is None:
            if self.tty and self._width:
                self.stream.write("\n")
                self.stream.flush()
        elif self.tty or text != self._last:
            self._write(text, final=True)

    def _write(self, text, final):
        self._last = text
        if self.tty:
            # Spaces clear what is left of a longer previous text.
            self.stream.write("\r" + text + " " * max(0, self._width - len(text)) + ("\n" if final else ""))
            self._width = 0 if final else len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


class TextProgress:
    """A one-line progress display: an updating bar on a terminal, a plain line every few seconds otherwise.

    ``update(done)`` is cheap to call often; ``close()`` prints the final line, unless (off a terminal) the
    last line printed already showed the same count.
    """

    def __init__(self, total, label="tasks", stream=None, enabled=True, interval=_PROGRESS_INTERVAL):
        self.total = int(total)
        self.label = label
        self.enabled = bool(enabled) and self.total > 0
        self._status = StatusLine(stream, self.enabled, interval)
        self.stream, self.tty, self.interval = self._status.stream, self._status.tty, self._status.interval
        self.done = 0
        self._shown_done = None

    def _line(self):
        from dask.utils import format_time

        fraction = self.done / self.total if self.total else 1.0
        elapsed = format_time(self._status.elapsed)
        if self.tty:
            width = 30
            filled = round(width * fraction)
            return f"[{'#' * filled}{' ' * (width - filled)}] {fraction:4.0%} | {self.done}/{self.total} " \
                   f"{self.label} | {elapsed}"
        return f"{self.done}/{self.total} {self.label} ({fraction:.0%}) after {elapsed}"

    def update(self, done):
        self.done = int(done)
        if self.enabled and (self._status.due() or (self.done == self.total and self._shown_done != self.done)):
            self._status.show(self._line(), force=True)
            self._shown_done = self.done

    def close(self):
        if self.enabled:
            self.enabled = False
            self._status.close(None if not self.tty and self._shown_done == self.done else self._line())


def local_progress(progress):
    """A Dask callback that reports the finished tasks of a local-scheduler run to ``progress`` (a
    :class:`TextProgress`)."""
    from dask.callbacks import Callback

    class LocalProgress(Callback):
        def __init__(self):
            super().__init__()
            self.n_tasks = 0

        def _start_state(self, dsk, state):
            self.n_tasks = len(dsk)

        def _posttask(self, key, result, dsk, state, worker_id):
            done = len(state["finished"]) * progress.total // max(self.n_tasks, 1)
            if done:
                progress.update(done)

    return LocalProgress()
