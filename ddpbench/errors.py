"""Errors a person can act on."""


class InputError(Exception):
    """Bad user input: reported as one line naming the file, the key and what is allowed.

    The CLI prints ``str(err)`` and exits with code 2; it never shows a traceback for these.
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
