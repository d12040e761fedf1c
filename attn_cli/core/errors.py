"""User errors: a wrong input is one clear line and exit code 2, never a traceback."""


class UserError(Exception):
    """A problem with what the user asked for, with the fix in the message.

    The CLI prints ``attn: error: <message>`` on stderr and exits with code 2.
    """

    exit_code = 2
