"""The one error type users see."""


class UserError(Exception):
    """A problem the user can fix: bad input, bad config, a missing key or package.

    The message is one sentence that names the file or config key and says what to do.
    Stage entry points and the command line print it without a traceback.
    """
