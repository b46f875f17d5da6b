"""One line of human text → a `Decision`, by a small deterministic grammar (`grammar/v1`).

    decision  := [lead] clause [("," | ", or" | "otherwise" | "else") clause]
    clause    := action [targets] [params] [scope] [condition]  |  N "is" ["a"|"the"] ("bigger"|"better"|…) …
    condition := ("if" | "only if" | "when" | "unless") pred {("and" | "or") pred}

Unknown text is refused with "didn't understand …; try: …" — the grammar never guesses.

The package's rooms: vocabulary.py (the grammar's words) → phrases.py (a line made plain; conditions, targets,
verbs) → reading.py (one clause) → grammar.py (the grammar bound to one gate) → parse.py (the entry points); the
clause reader it calls is policies/clauses.py.
"""

from policies.decisions.grammar import canonical
from policies.decisions.parse import check_states, option_states, parse_at_gate, parse_decision, pronoun_option
from policies.decisions.reading import MAX_REVERTS
from policies.decisions.vocabulary import EXAMPLES, MAX_CHARS, PARSER, check_length
from policies.refusals import DecisionError, NotUnderstood

__all__ = [
    "EXAMPLES",
    "MAX_CHARS",
    "MAX_REVERTS",
    "PARSER",
    "DecisionError",
    "NotUnderstood",
    "canonical",
    "check_length",
    "check_states",
    "option_states",
    "parse_at_gate",
    "parse_decision",
    "pronoun_option",
]
