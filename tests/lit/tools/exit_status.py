"""Run a command, print its merged stdout/stderr, then `exit status: N, output lines: K`.

lit's internal shell can only say that a command failed (`not`); convc's exit codes
(1 user error, 2 usage, 3 internal) are part of its interface, and so is printing a
user error as exactly one line, so tests check both. Always exits 0.
"""

import subprocess
import sys


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: exit_status.py COMMAND [ARGS...]", file=sys.stderr)
        return 2
    completed = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    sys.stdout.buffer.write(completed.stdout)
    lines = len(completed.stdout.splitlines())
    sys.stdout.write(f"exit status: {completed.returncode}, output lines: {lines}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
