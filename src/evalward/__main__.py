"""`python -m evalward` = the `evalward` command."""

from evalward._cli.main import main

main()
