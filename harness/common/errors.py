"""The error a user makes: `cli.main` prints it as one line and exits 2."""


class UserError(ValueError):
    """A request the harness cannot serve as given; the message says what to change."""
