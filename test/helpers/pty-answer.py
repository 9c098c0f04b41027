#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal and answers its questions, for tests of ears' terminal prompt.

Usage: pty-answer.py ANSWERS_JSON COMMAND [ARGS...]

The command gets a fresh pty as stdin, stdout and stderr (Node has no pty module). Each time its output
shows another "[y/N] ", the next answer of ANSWERS_JSON (a list of strings) is typed with a newline; once
they run out, end-of-input (Ctrl-D) is typed instead, so a question nobody expected cannot hang the test.
Everything the command wrote to the terminal is copied, byte for byte, to this script's stdout; the exit
status is the command's (128 + n for a signal).
"""
import json
import os
import pty
import sys

PROMPT = b"[y/N] "


def main() -> int:
    answers = json.loads(sys.argv[1])
    command = sys.argv[2:]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    out = b""
    asked = 0
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the command's side of the terminal is closed
            break
        if not chunk:
            break
        out += chunk
        while out.count(PROMPT) > asked:
            os.write(fd, (answers[asked] + "\n").encode() if asked < len(answers) else b"\x04")
            asked += 1
    _, status = os.waitpid(pid, 0)
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main())
