"""Errors a person can act on."""


class InputError(Exception):
    """Bad user input: reported as one line naming the file, the key and what is allowed.

    The CLI prints ``str(err)`` and exits with code 2; it never shows a traceback for these. One
    raised in a worker process (a pool's, Ray's) pickles whole, so the command says the same line.
    """

    def __init__(self, source: str, key: str | None, message: str):
        self.source = str(source)
        self.key = key
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.source}: {self.key}" if self.key else self.source
        # One line, whatever the message carried in.
        return f"{where}: {self.message}".replace("\n", " ")

    def __reduce__(self):
        # Whole across a process boundary (a worker pool's, Ray's): pickle's default rebuilds an
        # exception as ``cls(*self.args)``, which has one argument where __init__ takes three.
        return type(self), (self.source, self.key, self.message), self.__dict__


#: the most characters of a bad value an error line echoes
SHOWN_CHARS = 80


def shown(value) -> str:
    """A bad value as an error line echoes it: as the user wrote it where that is plain (a TOML date or
    time as its ISO text, ``2026-11-01``; text and numbers as ``repr``), cut to :data:`SHOWN_CHARS`
    characters with how long it was."""
    import datetime

    text = value.isoformat() if isinstance(value, (datetime.date, datetime.time)) else repr(value)
    if isinstance(value, (datetime.date, datetime.time)):
        text = f"the TOML {'date' if type(value) is datetime.date else 'time'} {text}"
    if len(text) > SHOWN_CHARS:
        text = f"{text[:SHOWN_CHARS - 1]}… ({len(text)} characters)"
    return text
