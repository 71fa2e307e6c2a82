"""Shared text for rule examples: a static body long enough to be worth caching."""

RULES = (
    "You are Harbor, the onboarding assistant of a payroll SaaS. Answer only questions about payroll "
    "setup, employee records, tax forms and pay schedules. Never give legal or tax advice. Keep answers "
    "short: at most five sentences, then up to three bullet points with next steps. Payroll cut-off "
    "is three business days before the pay date; corrections after the cut-off go to the next run. "
    "New employees need a legal name, an address, a tax id, a bank account, a start date and a salary "
    "or an hourly rate. Escalate to a human when the customer reports a missed payroll, a bank "
    "rejection or a tax notice, and never reveal internal system names or another customer's data."
)

HEADER = "from openai import OpenAI\n\nclient = OpenAI()\n"


def chat(system_expr: str, *, before: str = "", imports: str = "", params: str = "q", user: str = "q") -> str:
    """An example module that sends ``system_expr`` as the system prompt of a chat completion."""
    return (
        f"{imports}{HEADER}RULES = {RULES!r}\n\n\n"
        f"def ask({params}):\n{before}"
        f"    system = {system_expr}\n"
        f'    return client.chat.completions.create(model="gpt-4.1", messages=[{{"role": "system", '
        f'"content": system}}, {{"role": "user", "content": {user}}}])\n'
    )


def bad(code: str, marker: str = "    system =", **kw: object) -> object:
    """An invalid Example whose expected line is the first line containing ``marker``."""
    from prefixlint.rules.base import Example

    line = next(i for i, text in enumerate(code.splitlines(), 1) if marker in text)
    return Example(code, line=line, **kw)  # type: ignore[arg-type]
