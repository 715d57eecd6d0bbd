"""The command-line interface: the only layer that parses arguments, reads the environment or prints."""
