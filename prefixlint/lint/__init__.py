"""The ``check`` pipeline: config, file discovery, per-file checking, fixes, result cache, suppressions.

Takes paths and settings; runs the analyzers (``analysis``) and the rules (``rules``) on each file,
and gives findings after suppressions, ready for a reporter. Prints nothing.
"""
