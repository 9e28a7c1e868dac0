"""`python -m evalward` = the `evalward` command."""

from evalward._cli.entry import main

main()
