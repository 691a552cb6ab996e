"""``kernelrank completion bash|zsh|fish``: a shell completion script, generated from the command registry.

It completes the first words (every terminal command of the registry and the process commands), an admin
command's next words, and each command's options; file arguments fall back to the shell's own file completion.
Install it with ``eval "$(kernelrank completion bash)"`` in ~/.bashrc (zsh: the same with ``zsh``; fish:
``kernelrank completion fish | source``).
"""

from __future__ import annotations

import sys

from adapters.cli import parser_for
from core.contracts.registry import COMMANDS

SHELLS = ("bash", "zsh", "fish")


def main(argv: list[str], other_commands: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in SHELLS:
        print(f"kernelrank completion: name the shell: {', '.join(SHELLS)}.", file=sys.stderr)
        return 2
    print(script(argv[0], other_commands))
    return 0


def words_and_options(other_commands: list[str]) -> tuple[list[str], dict[str, list[str]], dict[str, list[str]]]:
    """The first words; the words that may follow each first word (``admin`` → ``token create ...``); the options
    of each command, keyed by its first two words joined with a space."""
    specs = [spec for spec in COMMANDS if spec.offered_on("terminal")]
    first = list(dict.fromkeys([*(spec.words[0] for spec in specs), *other_commands]))
    following: dict[str, list[str]] = {}
    for spec in specs:
        if len(spec.words) > 1:
            following.setdefault(spec.words[0], [])
            following[spec.words[0]] = list(dict.fromkeys([*following[spec.words[0]], spec.words[1]]))
    options: dict[str, list[str]] = {}
    for spec in specs:  # three-word commands (admin token issue) share the options of their first two words
        key = " ".join(spec.words[:2])
        flags = [flag for action in parser_for(spec)._actions for flag in action.option_strings]
        options[key] = list(dict.fromkeys([*options.get(key, []), *flags]))
    return first, following, options


def script(shell: str, other_commands: list[str]) -> str:
    first, following, options = words_and_options(other_commands)
    if shell == "fish":
        return _fish(first, following, options)
    cases = "\n".join(f'        "{name}") opts="{" ".join(flags)}" ;;' for name, flags in options.items() if flags)
    subs = "\n".join(f'        "{word}") words="{" ".join(rest)}" ;;' for word, rest in following.items())
    body = f"""_kernelrank() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" opts="" words=""
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "{" ".join(first)}" -- "$cur")); return
    fi
    case "${{COMP_WORDS[1]}}" in
{subs}
    esac
    if [ "$COMP_CWORD" -eq 2 ] && [ -n "$words" ]; then
        COMPREPLY=($(compgen -W "$words" -- "$cur")); return
    fi
    local name="${{COMP_WORDS[1]}}"
    [ -n "$words" ] && name="${{COMP_WORDS[1]}} ${{COMP_WORDS[2]}}"
    case "$name" in
{cases}
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}}
complete -F _kernelrank kernelrank"""
    if shell == "zsh":
        return "autoload -U +X bashcompinit && bashcompinit\n" + body
    return body


def _fish(first: list[str], following: dict[str, list[str]], options: dict[str, list[str]]) -> str:
    lines = [f"complete -c kernelrank -n __fish_use_subcommand -f -a '{' '.join(first)}'"]
    for word, rest in following.items():
        lines.append(f"complete -c kernelrank -n '__fish_seen_subcommand_from {word}' -f -a '{' '.join(rest)}'")
    for name, flags in options.items():
        for flag in flags:
            if flag.startswith("--"):
                lines.append(
                    f"complete -c kernelrank -n '__fish_seen_subcommand_from {name.split()[-1]}' -l {flag[2:]}"
                )
    return "\n".join(lines)
