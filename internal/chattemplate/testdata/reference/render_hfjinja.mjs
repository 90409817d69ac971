// Reference renderer: @huggingface/jinja, the engine behind transformers.js'
// apply_chat_template, used as a second independent check of
// internal/chattemplate. Same stdin/stdout protocol as render_jinja2.py (its
// failures never set "raise": the library throws plain Errors); the
// module directory comes from the NODE_REF_MODULES environment variable.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import path from "node:path";

const modules = process.env.NODE_REF_MODULES;
const require = createRequire(path.join(modules, "noop.js"));
const { Template, Environment } = require("@huggingface/jinja");

const TAG = "CONTINUE_FINAL_MESSAGE_TAG ";
const request = JSON.parse(readFileSync(0, "utf8"));
const now = new Date(request.now ?? "2026-07-04T09:05:06");

function pad2(n) {
  return n < 10 ? "0" + n : String(n);
}
const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const longMonths = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
// A fixed clock in the same C-locale format Python's strftime uses.
function strftimeNow(format) {
  return String(format).replace(/%[YmdbBHMS%]/g, (t) => ({
    "%Y": String(now.getFullYear()), "%m": pad2(now.getMonth() + 1), "%d": pad2(now.getDate()),
    "%b": months[now.getMonth()], "%B": longMonths[now.getMonth()], "%H": pad2(now.getHours()),
    "%M": pad2(now.getMinutes()), "%S": pad2(now.getSeconds()), "%%": "%",
  })[t]);
}

function render(template, c) {
  let messages = c.messages;
  let final;
  const cont = !!c.continue_final_message;
  if (cont) {
    if (c.add_generation_prompt) throw new Error("continue_final_message and add_generation_prompt are not compatible.");
    messages = structuredClone(messages);
    const last = messages[messages.length - 1];
    final = last.content;
    if (final == null) throw new Error("final message has no content");
    if (Array.isArray(final)) {
      const block = [...final].reverse().find((b) => "text" in b);
      if (!block) throw new Error("no text to continue in the final message");
      final = block.text;
      block.text = block.text + TAG;
    } else {
      last.content = last.content + TAG;
    }
  }
  let text = template.render({
    messages,
    tools: c.tools ?? null,
    documents: c.documents ?? null,
    add_generation_prompt: !!c.add_generation_prompt,
    bos_token: c.bos_token ?? "",
    eos_token: c.eos_token ?? "",
    ...(c.kwargs ?? {}),
  });
  if (cont) {
    if (!text.includes(final.trim()) || !text.includes(TAG.trim())) throw new Error("final message does not appear in the chat");
    const loc = text.lastIndexOf(TAG.trim());
    text = text.slice(loc, loc + TAG.length) === TAG ? text.slice(0, loc) : text.slice(0, loc).trimEnd();
  }
  return text;
}

// The library installs its own strftime_now (the real clock) and refuses to
// redeclare it, so swap ours in when its global is set.
const originalSet = Environment.prototype.set;
Environment.prototype.set = function (name, value) {
  return originalSet.call(this, name, name === "strftime_now" ? strftimeNow : value);
};

function failure(e) {
  return { error: String(e && e.message ? e.message : e), raise: false };
}

const out = request.jobs.map((job) => {
  let template;
  try {
    template = new Template(job.template);
  } catch (e) {
    return job.cases.map(() => failure(e));
  }
  return job.cases.map((c) => {
    try {
      return { text: render(template, c) };
    } catch (e) {
      return failure(e);
    }
  });
});
process.stdout.write(JSON.stringify(out));
