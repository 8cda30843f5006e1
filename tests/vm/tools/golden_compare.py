#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Compares a tool's output with a golden template, line by line. The text
# must be the same except for fields marked {{...}}:
#
#   {{int LO..HI}}   an integer in [LO, HI]
#   {{num LO..HI}}   a decimal number in [LO, HI]
#   {{rate LO..HI}}  a byte rate as the tools print it ("0 B/s", "3.1 MiB/s"),
#                    in [LO, HI] bytes/s; LO and HI take K, M, G (KiB...)
#   {{bar N}}        N characters of a gauge (block elements or blanks)
#   {{time}}         a time of day HH:MM:SS within 10 minutes of now
#   {{_}}            blanks that pad a column whose width depends on a
#                    field of another line (one or more)
#   {{NAME}}         exactly the value given with --var NAME=VALUE
#
# A field's width may differ from the template's, so the blanks on either
# side of a field (padding of aligned columns) match any number of blanks,
# at least one where the template has some. Everything else, blanks
# included, must match exactly, and the number of lines too.
#
# usage: golden_compare.py [--var NAME=VALUE]... TEMPLATE OUTPUT [TEMPLATE OUTPUT]...
# Exit status 0 when every output matches its template; 1 when one does not,
# with its first mismatch described on stderr (the template, line and
# column, what was expected and what was found); 2 for a bad template or a
# file that cannot be read.
import argparse
import re
import sys
import time

FIELD = re.compile(r"\{\{(.*?)\}\}")
NUMBER = r"-?[0-9]+(?:\.[0-9]+)?"
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
RATE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
GAUGE = " \u258f\u258e\u258d\u258c\u258b\u258a\u2589\u2588"


class TemplateError(Exception):
    pass


def parse_bound(text, units=False):
    m = re.fullmatch(r"(-?[0-9.]+(?:e[0-9]+)?)([KMGT]?)", text.strip())
    if not m or (m.group(2) and not units):
        raise TemplateError(f"bad bound {text!r}")
    return float(m.group(1)) * UNITS[m.group(2)]


def parse_range(args, units=False):
    lo, sep, hi = args.partition("..")
    if not sep:
        raise TemplateError(f"expected LO..HI, got {args!r}")
    return parse_bound(lo, units), parse_bound(hi, units)


class Field:
    """One {{...}} of a template: a regular expression and a check."""

    def __init__(self, spec, variables):
        self.spec = spec
        kind, _, args = spec.strip().partition(" ")
        self.kind = kind
        self.range = None
        self.value = None
        self.args = args.strip()
        if kind in ("int", "num"):
            self.range = parse_range(args)
            self.regex = r"-?[0-9]+" if kind == "int" else NUMBER
        elif kind == "rate":
            self.range = parse_range(args, units=True)
            self.regex = NUMBER + r" (?:B|KiB|MiB|GiB|TiB)/s"
        elif kind == "bar":
            if not args.strip().isdigit():
                raise TemplateError(f"{{{{bar N}}}} needs a width, got {spec!r}")
            self.regex = f"[{GAUGE}]{{{int(args)}}}"
        elif kind == "time":
            self.regex = r"[0-2][0-9]:[0-5][0-9]:[0-6][0-9]"
        elif kind == "_":
            self.regex = " +"
        elif kind in variables and not args:
            self.value = variables[kind]
            self.regex = re.escape(self.value)
        else:
            raise TemplateError(f"unknown field {{{{{spec}}}}} (variables: "
                                f"{', '.join(sorted(variables)) or 'none'})")

    def check(self, text):
        """None when text is a right value, else why not."""
        if self.kind in ("int", "num", "rate"):
            if self.kind == "rate":
                number, unit = text[:-2].split(" ")
                value = float(number) * RATE_UNITS[unit]
            else:
                value = float(text)
            lo, hi = self.range
            if not lo <= value <= hi:
                shown = f"{text} ({value:.0f} B/s)" if self.kind == "rate" else text
                return f"{shown} is outside {self.args}"
        elif self.kind == "time":
            h, m, s = (int(x) for x in text.split(":"))
            now = time.localtime()
            diff = abs(h * 3600 + m * 60 + s - (now.tm_hour * 3600 + now.tm_min * 60 + now.tm_sec))
            if min(diff, 86400 - diff) > 600:
                return f"{text} is not within 10 minutes of {time.strftime('%H:%M:%S', now)}"
        return None


class Line:
    """A template line: literal text and fields, as one regular expression."""

    def __init__(self, text, variables):
        self.text = text
        self.parts = []  # (literal, None) or (None, Field)
        pos = 0
        for m in FIELD.finditer(text):
            if m.start() > pos:
                self.parts.append((text[pos:m.start()], None))
            self.parts.append((None, Field(m.group(1), variables)))
            pos = m.end()
        if pos < len(text) or not self.parts:
            self.parts.append((text[pos:], None))
        self.fields = [f for _, f in self.parts if f]

        # Each part as (leading blanks, text, trailing blanks) of an
        # expression: a literal's blanks next to a field match any number
        # of blanks (at least one).
        self.pieces = []
        for i, (lit, field) in enumerate(self.parts):
            if field:
                self.pieces.append(("", None, ""))
                continue
            core, lead, trail = lit, "", ""
            if i > 0 and self.parts[i - 1][1] is not None and core.startswith(" "):
                core, lead = core.lstrip(" "), " +"
            if i + 1 < len(self.parts) and self.parts[i + 1][1] is not None and \
                    core.endswith(" "):
                core, trail = core.rstrip(" "), " +"
            if not core and lead and trail:
                trail = ""
            self.pieces.append((lead, core, trail))

    def regex(self, count=None):
        """The expression of the first `count` parts (all by default)."""
        n = len(self.parts) if count is None else count
        out = ""
        for (lead, core, trail), (_, field) in zip(self.pieces[:n], self.parts[:n]):
            out += f"({field.regex})" if field else lead + re.escape(core) + trail
        return out

    def mismatch(self, actual):
        """Where the actual line stops agreeing with the template: (column,
        index of the part, characters of that part's literal text that
        matched)."""
        k = 0
        while k < len(self.parts) and re.match(self.regex(k + 1), actual):
            k += 1
        prefix = self.regex(k)
        m = re.match(prefix, actual)
        column, matched = (m.end() if m else 0), 0
        if k < len(self.parts) and self.parts[k][0]:
            lead, core, _ = self.pieces[k]
            for n in range(len(core), -1, -1):
                m = re.match(prefix + lead + re.escape(core[:n]), actual)
                if m:
                    column, matched = m.end(), n
                    break
        return column, k, matched


def compare(template_lines, actual_lines, variables, name):
    """None when they match, else a description of the first mismatch."""
    for i, t in enumerate(template_lines):
        if i >= len(actual_lines):
            return f"{name}: line {i + 1}: the output ends; expected:\n  {t}"
        line = Line(t, variables)
        a = actual_lines[i]
        m = re.fullmatch(line.regex(), a)
        if not m:
            col, part, matched = line.mismatch(a)
            lit, field = line.parts[part] if part < len(line.parts) else (None, None)
            if field and field.value is not None:
                what = f"{{{{{field.spec}}}}} = {field.value!r}"
            elif field:
                what = f"a field {{{{{field.spec}}}}}"
            elif lit:
                what = repr(line.pieces[part][1][matched:][:30])
            else:
                what = "the end of the line"
            found = repr(a[col:col + 30]) if col < len(a) else "the end of the line"
            return (f"{name}: line {i + 1}, column {col + 1}: expected {what}, found {found}\n"
                    f"  template: {t}\n"
                    f"  output:   {a}\n"
                    f"            {' ' * col}^")
        for field, value in zip(line.fields, m.groups()):
            why = field.check(value)
            if why:
                col = m.start(line.fields.index(field) + 1)
                return (f"{name}: line {i + 1}, column {col + 1}: {{{{{field.spec}}}}}: {why}\n"
                        f"  template: {t}\n"
                        f"  output:   {a}\n"
                        f"            {' ' * col}^")
    if len(actual_lines) > len(template_lines):
        return (f"{name}: line {len(template_lines) + 1}: the template ends; the output has "
                f"{len(actual_lines) - len(template_lines)} more line(s):\n"
                f"  {actual_lines[len(template_lines)]}")
    return None


def main():
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(encoding="utf-8", errors="backslashreplace")
    ap = argparse.ArgumentParser(description="Compare outputs with golden templates.")
    ap.add_argument("--var", action="append", default=[], metavar="NAME=VALUE",
                    help="the value of {{NAME}}")
    ap.add_argument("files", nargs="+", metavar="TEMPLATE OUTPUT",
                    help="pairs of a template and the output to compare with it")
    args = ap.parse_args()
    if len(args.files) % 2:
        ap.error("expected pairs of TEMPLATE OUTPUT")
    variables = {}
    for v in args.var:
        name, sep, value = v.partition("=")
        if not sep or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            ap.error(f"--var {v!r}: expected NAME=VALUE")
        variables[name] = value
    status = 0
    for template_path, output_path in zip(args.files[::2], args.files[1::2]):
        name = template_path.rsplit("/", 1)[-1]
        try:
            with open(template_path, encoding="utf-8") as f:
                template = f.read().splitlines()
            with open(output_path, encoding="utf-8", errors="backslashreplace") as f:
                actual = f.read().splitlines()
            why = compare(template, actual, variables, name)
        except OSError as e:
            print(f"golden_compare: {e}", file=sys.stderr)
            return 2
        except TemplateError as e:
            print(f"golden_compare: {name}: {e}", file=sys.stderr)
            return 2
        if why:
            print(f"golden_compare: {why}", file=sys.stderr)
            status = 1
        else:
            print(f"golden_compare: {name}: ok ({len(actual)} lines)")
    return status


if __name__ == "__main__":
    sys.exit(main())
