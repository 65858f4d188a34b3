"""The one exception type the command line turns into a one-line message on stderr."""


class HarnessError(Exception):
    """A user-facing error: the message names the file, entry, field or id at fault."""
