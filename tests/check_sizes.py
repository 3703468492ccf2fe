#!/usr/bin/env python3
"""Sizes that keep the code easy to live in (docs/ARCHITECTURE.md, "Sizes"):

* no folder of src/ (nor kernels/, nor a folder of kernels/) holds more than 15% of the C++/CUDA
  lines under src/ and kernels/: a folder that grows past it holds more than one concept;
* no source file (src/, kernels/, python/src/) is longer than 500 lines unless a line of its
  top comment says why, containing "Longer than 500 lines because";
* no function is longer than 80 lines unless the file's top comment says why ("Functions
  longer than 80 lines because") or the comment right above the function does ("Longer than 80
  lines because").

A function is found by brace matching on the text with comments, strings and character
literals blanked: a '{' at namespace or class scope whose text since the last ';', '{' or '}'
holds a ')' outside '=' initialisers and is not a namespace, class, struct, union or enum
opens a function body; its length runs from the line of its signature's first word to the
line of its closing '}'. Lambdas and local classes count in their function.

Exit 1 listing every offender, 0 when all hold. --list prints every size the check measured.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_SUFFIXES = (".h", ".cpp", ".cu", ".cuh")
FOLDER_SHARE = 0.15
FILE_LINES = 500
FUNCTION_LINES = 80
FILE_REASON = "Longer than 500 lines because"
FUNCTIONS_REASON = "Functions longer than 80 lines because"
FUNCTION_REASON = "Longer than 80 lines because"

# Sizes owned by work in progress on another branch, listed so that this check holds meanwhile
# and says what is left: "path" for a file's length, "path:function" for a function's. The check
# prints them; remove an entry when its code is split or gives its reason. None now: the PB work
# that held the last ones has landed and its code is split or says why.
PENDING = {}


def source_files(folders):
    for folder in folders:
        for dirpath, _, names in os.walk(os.path.join(ROOT, folder)):
            for name in sorted(names):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.relpath(os.path.join(dirpath, name), ROOT)


def blank_comments_and_strings(text):
    """The text with comments, string and character literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")  # a digit separator: 1'000'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


SCOPE = re.compile(r"\b(namespace|class|struct|union|enum)\b|\bextern\s*$")
NAME = re.compile(r"(~?[A-Za-z_][A-Za-z0-9_]*|operator\s*\S+?)\s*(?:<[^()]*>)?\s*\($")


def outside_parentheses(text):
    depth, out = 0, []
    for c in text:
        if c == "(":
            depth += 1
            if depth == 1:
                out.append("(")
        elif c == ")":
            depth = max(depth - 1, 0)
            if depth == 0:
                out.append(")")
        elif depth == 0:
            out.append(c)
    return "".join(out)


def functions(text):
    """(name, first line, last line) of each function body at namespace or class scope."""
    code = blank_comments_and_strings(text)
    found = []
    scopes = []  # for each open '{': None (namespace/class/initialiser) or (name, first line)
    statement_start = 0
    for i, c in enumerate(code):
        if c == "{":
            inside_function = any(s is not None for s in scopes)
            prefix = code[statement_start:i]
            entry = None
            if not inside_function:
                flat = outside_parentheses(prefix)
                head = flat.split("(")[0]
                is_function = (")" in flat and "=" not in head and not SCOPE.search(head)
                               and not re.search(r"\b(if|for|while|switch|catch|do|else|return)\b", head))
                if is_function:
                    first = statement_start + (len(prefix) - len(prefix.lstrip()))
                    name_part = prefix[: prefix.find("(")] + "(" if "(" in prefix else prefix
                    m = NAME.search(name_part.rstrip())
                    name = m.group(1) if m else prefix.strip().split("(")[0].split()[-1]
                    entry = (name, code.count("\n", 0, first) + 1)
            scopes.append(entry)
            statement_start = i + 1
        elif c == "}":
            if scopes:
                entry = scopes.pop()
                if entry is not None and not any(s is not None for s in scopes):
                    found.append((entry[0], entry[1], code.count("\n", 0, i) + 1))
            statement_start = i + 1
        elif c == ";" or (c == ":" and code[i - 1 : i + 1] != "::" and code[i : i + 2] != "::"
                          and re.search(r"\b(public|private|protected)\s*$", code[statement_start:i])):
            if c == ";" and any(s is not None for s in scopes):
                continue
            statement_start = i + 1
        elif c == "#" and (i == 0 or code[i - 1] == "\n") and not any(s is not None for s in scopes):
            statement_start = code.find("\n", i) + 1 or len(code)
    return found


def comment_text(lines):
    """The words of comment lines, their "//" (or "///") and line breaks gone, so that a reason
    may wrap anywhere."""
    return " ".join(line.strip().lstrip("/").strip() for line in lines)


def top_comment(lines):
    """The comment lines at the top of a file (blank lines between them included)."""
    out = []
    for line in lines:
        if line.startswith("//") or (line.strip() == "" and out):
            out.append(line)
        else:
            break
    return comment_text(out)


def main():
    listing = "--list" in sys.argv[1:]
    problems = []
    counts = {}
    for path in source_files(["src", "kernels"]):
        # src/'s folders, and kernels/ with each of its subfolders (kernels/pb/) a folder of its own
        parts = path.split("/")
        folder = "/".join(parts[:2]) if path.startswith("src/") or len(parts) > 2 else "kernels"
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            counts[folder] = counts.get(folder, 0) + sum(1 for _ in f)
    total = sum(counts.values())
    for folder, lines in sorted(counts.items(), key=lambda kv: -kv[1]):
        share = lines / total
        if listing:
            print(f"{folder}: {lines} lines, {100 * share:.1f}% of {total}")
        if share > FOLDER_SHARE:
            problems.append(f"{folder}: {lines} of {total} C++/CUDA lines ({100 * share:.1f}%, over "
                            f"{100 * FOLDER_SHARE:.0f}%): split it by concept")
    for path in source_files(["src", "kernels", "python/src"]):
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            text = f.read()
        lines = text.split("\n")
        top = top_comment(lines)
        if len(lines) > FILE_LINES and FILE_REASON not in top and path not in PENDING:
            problems.append(f"{path}: {len(lines)} lines (over {FILE_LINES}) and its top comment gives no reason "
                            f"(a line containing \"{FILE_REASON}\")")
        for name, first, last in functions(text):
            length = last - first + 1
            if listing and length > FUNCTION_LINES:
                print(f"{path}:{first}: {name} {length} lines")
            if length <= FUNCTION_LINES or FUNCTIONS_REASON in top or f"{path}:{name}" in PENDING:
                continue
            above = comment_text(lines[max(0, first - 6) : first - 1])
            if FUNCTION_REASON in above:
                continue
            problems.append(f"{path}:{first}: {name} is {length} lines (over {FUNCTION_LINES}); split it along its "
                            f"phases, or say why in a comment above it (\"{FUNCTION_REASON}\")")
    for entry, why in PENDING.items():
        print(f"pending: {entry}: {why}")
    for p in problems:
        print(p)
    print(f"check_sizes: {len(problems)} problem(s)" if problems else "check_sizes: every size holds")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
