"""The command-line commands, one typer app per module; ``prefixlint.cli`` mounts them.

Each command parses its options, calls the stages, and hands what they give to a reporter. This is
the last stage: it may import every other one, and none imports it.
"""
