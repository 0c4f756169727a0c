"""The interactive loop: read statements (prompt_toolkit on a terminal: line editing, history, completion,
Enter runs the input once it ends with ';'; plain lines from a pipe), run them on the session, print errors
and go on. `-f` and `-i` scripts run through `run_script_file` instead, which stops at the first error."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TextIO

from strom.sql_client.result_view import stops_the_client
from strom.sql_client.session import SqlSession
from strom.table.sql_script import SqlScriptError, is_complete, split_script

PROMPT = "Strom SQL> "
CONTINUATION = "> "
_QUIT_WORDS = ("QUIT", "EXIT", "QUIT;", "EXIT;")


def run_input(session: SqlSession, text: str) -> bool:
    """One input (one or more statements); False when it ended the session. Errors are printed."""
    try:
        statements = split_script(text)
    except SqlScriptError as e:
        session.report(e)
        return True
    for statement in statements:
        try:
            if not session.run(statement):
                return False
        except SqlScriptError as e:
            session.report(e)
            return True  # Flink's client drops the rest of the input after an error
    return True


def wants_to_run(text: str) -> bool:
    """Enter runs the input when it is whole statements (or a bare QUIT / EXIT); otherwise it adds a line."""
    return text.strip().upper() in _QUIT_WORDS or (bool(text.strip()) and is_complete(text))


def _terminal_inputs(session: SqlSession, history_file: str) -> Iterator[str]:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings

    from strom.sql_client.completion import SqlCompleter

    bindings = KeyBindings()

    @bindings.add("enter")
    def _enter(event) -> None:  # type: ignore[no-untyped-def]
        buffer = event.current_buffer
        if wants_to_run(buffer.text):
            buffer.validate_and_handle()
        else:
            buffer.insert_text("\n")

    os.makedirs(os.path.dirname(os.path.abspath(history_file)), exist_ok=True)
    prompt: PromptSession[str] = PromptSession(
        PROMPT, multiline=True, key_bindings=bindings, history=FileHistory(history_file),
        completer=SqlCompleter(session.table_names, session.function_names),
        prompt_continuation=lambda width, line, wrap: CONTINUATION.rjust(width),
        complete_while_typing=False, enable_history_search=False)
    while True:
        try:
            yield prompt.prompt()
        except KeyboardInterrupt as e:  # Ctrl-C at the prompt drops the line, as in Flink's client
            if stops_the_client(e):
                raise
            continue
        except EOFError:  # Ctrl-D
            return


def _pipe_inputs(stream: TextIO) -> Iterator[str]:
    buffer = ""
    for line in stream:
        buffer += line
        if wants_to_run(buffer):
            yield buffer
            buffer = ""
    if buffer.strip():
        yield buffer


def run_shell(session: SqlSession, *, history_file: str, stdin: TextIO) -> None:
    inputs = _terminal_inputs(session, history_file) if stdin.isatty() else _pipe_inputs(stdin)
    for text in inputs:
        if text.strip().upper() in _QUIT_WORDS[:2]:
            text += ";"
        if not run_input(session, text):
            return


def run_script_file(session: SqlSession, text: str, *, echo: bool) -> bool:
    """A script's statements in order (`-f`, `-i`); False after the first error (printed)."""
    try:
        statements = split_script(text, source=session.source)
    except SqlScriptError as e:
        session.report(e)
        return False
    for statement in statements:
        if echo:
            session.say(PROMPT + statement.text + ";", "")
        try:
            if not session.run(statement):
                return True
        except SqlScriptError as e:
            session.report(e)
            return False
    return True
