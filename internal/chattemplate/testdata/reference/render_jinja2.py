#!/usr/bin/python3
"""Reference renderer: Python Jinja2 configured the way Hugging Face
transformers renders chat templates (apply_chat_template with
tokenize=False), used to check internal/chattemplate byte for byte.

Reads one JSON object on stdin:
  {"now": "YYYY-MM-DDTHH:MM:SS",
   "jobs": [{"template": str,
             "cases": [{"messages": [...], "tools": [...]|null,
                        "add_generation_prompt": bool, "continue_final_message": bool,
                        "kwargs": {...}, "bos_token": str, "eos_token": str}, ...]}, ...]}
and writes one JSON array per job, holding per case {"text": str} or
{"error": str, "raise": bool} (raise is true for raise_exception). A
template that does not compile fails each of its cases.

The environment mirrors transformers' _compile_jinja_template: an
ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, the
loopcontrols extension and a no-op {% generation %} block, its own tojson
filter (json.dumps with ensure_ascii=False), raise_exception and
strftime_now (here on a fixed clock so runs are reproducible). The
continue_final_message handling mirrors render_jinja_template.
"""
import copy
import json
import sys
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

TAG = "CONTINUE_FINAL_MESSAGE_TAG "


class RaisedByTemplate(jinja2.exceptions.TemplateError):
    pass


class GenerationBlock(jinja2.ext.Extension):
    # transformers' AssistantTracker: {% generation %} renders its body.
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def compile_template(source, now):
    def raise_exception(message):
        raise RaisedByTemplate(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


def render(template, source, case):
    chat = case["messages"]
    kwargs = dict(case.get("kwargs") or {})
    kwargs.setdefault("bos_token", case.get("bos_token", ""))
    kwargs.setdefault("eos_token", case.get("eos_token", ""))
    agp = case.get("add_generation_prompt", False)
    cont = case.get("continue_final_message", False)
    if cont:
        if agp:
            raise ValueError("continue_final_message and add_generation_prompt are not compatible.")
        chat = copy.deepcopy(chat)
        final = chat[-1].get("content")
        if final is None:
            raise ValueError('continue_final_message is set but the final message has no "content" to continue!')
        if "content" not in source:
            raise ValueError("content is not an accepted field in the chat_template")
        if isinstance(final, (list, tuple)):
            for block in reversed(final):
                if "text" in block:
                    final = block["text"]
                    block["text"] = block["text"] + TAG
                    break
            else:
                raise ValueError("no text to continue in the final message")
        else:
            chat[-1]["content"] = chat[-1]["content"] + TAG
    text = template.render(
        messages=chat, tools=case.get("tools"), documents=case.get("documents"), add_generation_prompt=agp, **kwargs
    )
    if cont:
        if final.strip() not in text or TAG.strip() not in text:
            raise ValueError("continue_final_message is set but the final message does not appear in the chat")
        loc = text.rindex(TAG.strip())
        if text[loc : loc + len(TAG)] == TAG:
            text = text[:loc]
        else:
            text = text[:loc].rstrip()
    return text


def run_job(job, now):
    source = job["template"]
    try:
        template = compile_template(source, now)
    except Exception as exc:
        return [{"error": f"{type(exc).__name__}: {exc}", "raise": False} for _ in job["cases"]]
    out = []
    for case in job["cases"]:
        try:
            out.append({"text": render(template, source, case)})
        except RaisedByTemplate as exc:
            out.append({"error": str(exc.message), "raise": True})
        except Exception as exc:  # every other failure is compared as "some error"
            out.append({"error": f"{type(exc).__name__}: {exc}", "raise": False})
    return out


def main():
    request = json.load(sys.stdin)
    now = datetime.fromisoformat(request.get("now", "2026-07-04T09:05:06"))
    json.dump([run_job(job, now) for job in request["jobs"]], sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
