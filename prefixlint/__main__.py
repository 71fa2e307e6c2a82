from prefixlint.cli import entry

entry()
