"""Parse command lines with Python's argparse the way vLLM's parser reads
each flag kind, and print which ones parse.

stdin: {"flags": [{"name", "kind", "elem", "choices", "nullable",
"shorts"}], "cases": [[arg, ...], ...]}. stdout: a JSON list with one
boolean per case. The value types are Python's own int(), float() and
json.loads, argparse's choices, nargs and actions; human_readable_int and
union_dict_and_str follow vLLM's vllm/utils/argparse_utils.py and
vllm/engine/arg_utils.py.
"""

import argparse
import io
import json
import re
import sys


class Refused(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise Refused(message)


def human_readable_int(value):
    value = value.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", value)
    if match:
        decimal = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
        binary = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
        number, suffix = match.groups()
        if suffix in decimal:
            return int(float(number) * decimal[suffix])
        try:
            return int(number) * binary[suffix]
        except ValueError as e:
            raise argparse.ArgumentTypeError("decimal with a binary suffix") from e
    return int(value)


def optional_type(return_type):
    def parse(val):
        if val == "" or val == "None":
            return None
        return return_type(val)

    return parse


def union_dict_and_str(val):
    if not re.match(r"(?s)^\s*{.*}\s*$", val):
        return str(val)
    return optional_type(json.loads)(val)


def json_object(val):
    obj = json.loads(val)
    if not isinstance(obj, dict):
        raise ValueError("not an object")
    return obj


SCALAR_TYPES = {
    "string": str,
    "int": int,
    "float": float,
    "human_int": human_readable_int,
    "json": json.loads,
    "json_object": json_object,
    "json_or_string": union_dict_and_str,
}


def add(parser, flag):
    opts = ["--" + flag["name"]] + ["-" + s for s in flag["shorts"]]
    kind = flag["kind"]
    if kind == "store_true":
        parser.add_argument(*opts, action="store_true")
        return
    if kind == "bool":
        parser.add_argument(*opts, action=argparse.BooleanOptionalAction)
        return
    if kind == "optional_value":
        parser.add_argument(*opts, type=str, nargs="?", const=True)
        return
    if kind == "append":
        parser.add_argument(*opts, action="append", type=str)
        return
    kwargs = {}
    value_kind = flag["elem"] if kind == "list" else kind
    if value_kind == "choice":
        kwargs["type"] = str
        kwargs["choices"] = list(flag["choices"])
    elif value_kind == "int_choice":
        kwargs["type"] = int
        kwargs["choices"] = [int(c) for c in flag["choices"]]
    else:
        kwargs["type"] = SCALAR_TYPES[value_kind]
    if flag["nullable"] and kind != "json_or_string":
        kwargs["type"] = optional_type(kwargs["type"])
        if "choices" in kwargs:
            kwargs["choices"].append("None")
    if kind == "list":
        kwargs["nargs"] = "+"
    parser.add_argument(*opts, **kwargs)


def main():
    spec = json.load(sys.stdin)
    parser = Parser(allow_abbrev=False, add_help=False)
    for flag in spec["flags"]:
        add(parser, flag)
    results = []
    sys.stderr = io.StringIO()  # argparse writes nothing we need
    for case in spec["cases"]:
        try:
            parser.parse_args(case)
            results.append(True)
        except (Refused, SystemExit):
            results.append(False)
    sys.stdout.write(json.dumps(results))


main()
