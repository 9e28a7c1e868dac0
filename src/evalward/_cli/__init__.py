"""The command-line interface: one module per command, every option also an EVALWARD_* variable."""
