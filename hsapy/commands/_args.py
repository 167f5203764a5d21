"""Argument types the subcommands share: argparse refuses a bad number with the option's name
and exit status 2, as for any other bad option, instead of the command running with it."""
from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def count(least: int) -> Callable[[str], int]:
    """An int >= ``least`` (repetitions, table rows)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, not {value}")
        return value
    parse.__name__ = "count"      # argparse names the type in its messages
    return parse


def seconds(text: str) -> float:
    """A finite number of seconds >= 0 (timeouts, budgets)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds >= 0, not {text}")
    return value
