"""`python -m evalward` = the `evalward` command."""

from evalward.cli.main import main

main()
