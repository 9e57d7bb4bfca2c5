"""The one kind of error a user makes (a bad flag, path, config or baseline): the CLI prints it as one line
and exits 2. Discovery and the config raise their own subclass (DiscoveryError, ConfigError), the CLI's own flag
checks UserError itself; only `cli.main` catches them."""


class UserError(ValueError):
    """A request the harness cannot serve as given; the message says what to change."""
