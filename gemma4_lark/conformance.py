"""The conformance corpus, for this project's tests and for other implementations.

`gemma4-lark conformance export DIR` writes it as data, in the spirit of toml-test:

    DIR/valid/NAME.gemma     an input the grammar accepts
    DIR/valid/NAME.json      {"start": start rule, "expected": the decoded value as JSON}
    DIR/invalid/NAME.gemma   an input the grammar rejects
    DIR/invalid/NAME.json    {"start", "line", "column", "pos", "message": a fragment of ours}
    DIR/streams/NAME.json    {"text", "options", "events"}: a model output and the events a
                             streaming parser gives for it (consecutive text and thinking
                             deltas merged), with their spans; call ids are call_0, call_1, ...

Every expectation below is written by hand from docs/ and the grammar's comments; nothing is
produced by running a parser. In invalid inputs, `‸` marks where the error must be reported (it is
removed from the input). A stream's events are given with the exact text each one covers, so
their spans follow from the text. `tests/conformance/` holds this export, and a test checks it is
current: after editing, run `gemma4-lark conformance export tests/conformance`.

Values are encoded as `gemma4_lark.model.to_jsonable` does: a block is {"type", "name",
"arguments"|"fields"}, and floats are written with a fraction or exponent so they read back as
floats.
"""

import json
import pathlib
import shutil

D = '<|"|>'
MARK = "\u2038"


def s(text):
    return D + text + D


def call(name, body):
    return f"<|tool_call>call:{name}{body}<tool_call|>"


def C(name, arguments):
    return {"type": "tool_call", "name": name, "arguments": arguments}


def R(name, fields):
    return {"type": "tool_response", "name": name, "fields": fields}


def DECL(name, fields):
    return {"type": "tool_declaration", "name": name, "fields": fields}


def out(*parts):
    return {"type": "model_output", "parts": list(parts)}


def T(text):
    return {"type": "text", "text": text}


def TH(text):
    return {"type": "thought", "text": text}


def STOP(marker):
    return {"type": "stop", "marker": marker}


def turn(role, *parts, closed=True):
    return {"role": role, "closed": closed, "parts": list(parts)}


def transcript(*turns, bos=True):
    return {"type": "transcript", "bos": bos, "turns": list(turns)}


V = "value_document"
VALID = [
    # --- strings: verbatim, no escapes
    ("string-simple", V, s("hello"), "hello"),
    ("string-empty", V, s(""), ""),
    ("string-json-quotes", V, s('He said "hi"'), 'He said "hi"'),
    ("string-comma-braces", V, s("a, {b} [c]: d"), "a, {b} [c]: d"),
    ("string-newlines", V, s("line1\nline2\n"), "line1\nline2\n"),
    ("string-backslashes", V, s("C:\\dir\\n\\t"), "C:\\dir\\n\\t"),
    ("string-angle-pipes", V, s("a < b |> c <| d"), "a < b |> c <| d"),
    ("string-control-token-inside", V, s("literal }<tool_call|> inside"), "literal }<tool_call|> inside"),
    ("string-unicode", V, s("日本語 ✓ é"), "日本語 ✓ é"),
    ("string-padding-kept", V, s("   padded   "), "   padded   "),
    ("string-surrounding-whitespace", V, "  \n" + s("x") + "\n ", "x"),
    # --- integers: exact, any size
    ("int-zero", V, "0", 0),
    ("int-positive", V, "42", 42),
    ("int-negative", V, "-7", -7),
    ("int-huge", V, "123456789012345678901234567890", 123456789012345678901234567890),
    ("int-negative-zero", V, "-0", 0),
    ("int-leading-zeros", V, "007", 7),
    # --- floats
    ("float-simple", V, "2.5", 2.5),
    ("float-one-point-zero", V, "1.0", 1.0),
    ("float-negative-zero", V, "-0.0", -0.0),
    ("float-exponent-plus", V, "1e+20", 1e20),
    ("float-exponent-minus", V, "1e-07", 1e-07),
    ("float-exponent-capital", V, "1.5E10", 1.5e10),
    ("float-leading-dot", V, ".5", 0.5),
    ("float-negative-leading-dot", V, "-.5", -0.5),
    ("float-exponent-no-fraction", V, "1e5", 100000.0),
    ("float-trailing-dot", V, "3.", 3.0),
    ("float-underflow-to-zero", V, "-1e-1000", -0.0),
    # --- literals
    ("true", V, "true", True),
    ("false", V, "false", False),
    ("null", V, "null", None),
    ("null-python", V, "None", None),
    ("null-omp", V, "none", None),
    # --- bare words
    ("bare-lower", V, "celsius", "celsius"),
    ("bare-type-name", V, "STRING", "STRING"),
    ("bare-inner-space", V, "hello world", "hello world"),
    ("bare-url-with-colon", V, "https://example.com/a?b=c", "https://example.com/a?b=c"),
    ("bare-leading-dash-letter", V, "-foo", "-foo"),
    ("bare-keyword-prefix-null", V, "nullable", "nullable"),
    ("bare-keyword-prefix-true", V, "trueish", "trueish"),
    ("bare-capital-true", V, "True", "True"),
    ("bare-inf", V, "inf", "inf"),
    ("bare-nan", V, "NaN", "NaN"),
    ("bare-angle", V, "a<b", "a<b"),
    ("bare-backtick", V, "`x`", "`x`"),
    ("bare-trimmed-in-list", V, "[ x , y z ]", ["x", "y z"]),
    # --- lists
    ("list-empty", V, "[]", []),
    ("list-ints", V, "[1,2,3]", [1, 2, 3]),
    ("list-nested-empty", V, "[[],[[]]]", [[], [[]]]),
    ("list-mixed", V, "[1,-2.5,1e+20,true,null,None,none,celsius," + s("a, b") + ",{k:v}]",
     [1, -2.5, 1e20, True, None, None, None, "celsius", "a, b", {"k": "v"}]),
    ("list-whitespace", V, "[ 1 ,\n 2\t]", [1, 2]),
    # --- objects
    ("object-empty", V, "{}", {}),
    ("object-one", V, "{a:1}", {"a": 1}),
    ("object-quoted-key", V, "{" + s("my key") + ":1}", {"my key": 1}),
    ("object-key-punctuation", V, "{a-b.c$d@e_1:1}", {"a-b.c$d@e_1": 1}),
    ("object-numeric-key", V, "{3:x}", {"3": "x"}),
    ("object-duplicate-last-wins", V, "{a:1,b:2,a:3}", {"a": 3, "b": 2}),
    ("object-order-kept", V, "{z:1,a:2,m:3}", {"z": 1, "a": 2, "m": 3}),
    ("object-nested", V, "{a:{b:{c:[{}]}}}", {"a": {"b": {"c": [{}]}}}),
    ("object-pretty", V, "{\n  a : 1 ,\n  b : [ 2 ]\n}", {"a": 1, "b": [2]}),
    # --- calls
    ("call-weather", "call_block", call("get_current_weather", "{location:" + s("Tokyo, JP") + "}"),
     C("get_current_weather", {"location": "Tokyo, JP"})),
    ("call-empty-arguments", "call_block", call("ping", "{}"), C("ping", {})),
    ("call-hyphenated-name", "call_block", call("manim-video", "{mode:" + s("plan") + "}"),
     C("manim-video", {"mode": "plan"})),
    ("call-mcp-name", "call_block", call("github:create_issue", "{title:" + s("Bug") + "}"),
     C("github:create_issue", {"title": "Bug"})),
    ("call-dotted-name", "call_block", call("fs.read", "{path:" + s("/etc/hosts") + "}"),
     C("fs.read", {"path": "/etc/hosts"})),
    ("call-digits-name", "call_block", call("tool2", "{n:2}"), C("tool2", {"n": 2})),
    ("call-whitespace-around-tokens", "call_block", "<|tool_call> call: f { a : 1 } <tool_call|>",
     C("f", {"a": 1})),
    ("call-pretty-printed", "call_block",
     call("edit", "{edits:[\n  {newText:" + s("a") + ",\n   oldText:" + s("b") + "}\n]}"),
     C("edit", {"edits": [{"newText": "a", "oldText": "b"}]})),
    ("call-closer-inside-string", "call_block", call("todowrite", "{content:" + s("literal }<tool_call|> inside") + "}"),
     C("todowrite", {"content": "literal }<tool_call|> inside"})),
    ("call-bracket-inside-nested-string", "call_block",
     call("f", "{items:[[" + s("a]b") + "," + s("c") + "]," + s("tail") + "]}"),
     C("f", {"items": [["a]b", "c"], "tail"]})),
    ("call-quoted-dict-key", "call_block", call("update_records", "{record_map:{" + s("3") + ":" + s("new text") + "}}"),
     C("update_records", {"record_map": {"3": "new text"}})),
    ("call-nested-agent-message", "call_block",
     call("send_agent_message", "{arguments:{message:" + s("How are {you}?") + ",metadata:{urgent:false,tags:["
          + s("xmpp") + "," + s("demo") + "]}},endpointId:" + s("jane@example.org") + "}"),
     C("send_agent_message", {"arguments": {"message": "How are {you}?", "metadata": {"urgent": False, "tags": ["xmpp", "demo"]}},
                              "endpointId": "jane@example.org"})),
    ("call-exponent-and-none", "call_block", call("read", "{flag:1e+20,content:None,a1:null}"),
     C("read", {"flag": 1e20, "content": None, "a1": None})),
    ("call-code-argument", "call_block", call("execute_python", "{code:" + s('print("x, y")\nif a < b: {}') + "}"),
     C("execute_python", {"code": 'print("x, y")\nif a < b: {}'})),
    ("call-sorted-official-style", "call_block", call("search", "{limit:10,query:" + s("q") + ",safe:true}"),
     C("search", {"limit": 10, "query": "q", "safe": True})),
    # --- responses
    ("response-object", "response_block",
     "<|tool_response>response:get_weather{temperature:15,weather:" + s("sunny") + "}<tool_response|>",
     R("get_weather", {"temperature": 15, "weather": "sunny"})),
    ("response-value-string", "response_block", "<|tool_response>response:read{value:" + s("file text") + "}<tool_response|>",
     R("read", {"value": "file text"})),
    ("response-value-list", "response_block", "<|tool_response>response:ls{value:[" + s("a") + "," + s("b") + "]}<tool_response|>",
     R("ls", {"value": ["a", "b"]})),
    ("response-null", "response_block", "<|tool_response>response:f{value:null}<tool_response|>", R("f", {"value": None})),
    ("response-omp-output", "response_block",
     "<|tool_response>response:bash{output:{exitCode:1,stderr:" + s("Error: not found") + "}}<tool_response|>",
     R("bash", {"output": {"exitCode": 1, "stderr": "Error: not found"}})),
    # --- declarations
    ("declaration-official", "declaration_block",
     "<|tool>declaration:get_weather{description:" + s("Gets the weather.") + ",parameters:{properties:{location:{description:"
     + s("City") + ",type:" + s("STRING") + "},unit:{enum:[" + s("c") + "," + s("f") + "],type:" + s("STRING")
     + "}},required:[" + s("location") + "],type:" + s("OBJECT") + "}}<tool|>",
     DECL("get_weather", {"description": "Gets the weather.", "parameters": {
         "properties": {"location": {"description": "City", "type": "STRING"},
                        "unit": {"enum": ["c", "f"], "type": "STRING"}},
         "required": ["location"], "type": "OBJECT"}})),
    ("declaration-items-quoted-keys", "declaration_block",
     "<|tool>declaration:tag{description:" + s("Tags.") + ",parameters:{properties:{tags:{items:{" + s("type") + ":"
     + s("string") + "},type:" + s("ARRAY") + "}},type:" + s("OBJECT") + "}}<tool|>",
     DECL("tag", {"description": "Tags.", "parameters": {"properties": {"tags": {"items": {"type": "string"}, "type": "ARRAY"}},
                                                        "type": "OBJECT"}})),
    ("declaration-bare-types-old-template", "declaration_block",
     "<|tool>declaration:f{description:" + s("d") + ",parameters:{properties:{x:{type:STRING}},type:OBJECT}}<tool|>",
     DECL("f", {"description": "d", "parameters": {"properties": {"x": {"type": "STRING"}}, "type": "OBJECT"}})),
    ("declaration-with-response", "declaration_block",
     "<|tool>declaration:f{description:" + s("d") + ",response:{description:" + s("r") + ",type:" + s("OBJECT") + "}}<tool|>",
     DECL("f", {"description": "d", "response": {"description": "r", "type": "OBJECT"}})),
    ("declaration-nullable", "declaration_block",
     "<|tool>declaration:f{description:" + s("") + ",parameters:{properties:{x:{nullable:true,type:" + s("INTEGER") + "}},type:"
     + s("OBJECT") + "}}<tool|>",
     DECL("f", {"description": "", "parameters": {"properties": {"x": {"nullable": True, "type": "INTEGER"}}, "type": "OBJECT"}})),
    # --- thoughts
    ("thought-newline", "thought", "<|channel>thought\nI should check.<channel|>", TH("I should check.")),
    ("thought-no-newline", "thought", "<|channel>thought<channel|>", TH("")),
    ("thought-empty", "thought", "<|channel>thought\n<channel|>", TH("")),
    ("thought-with-delimiter", "thought", "<|channel>thought\nCareful with " + D + " in text.<channel|>",
     TH("Careful with " + D + " in text.")),
    ("thought-multiline", "thought", "<|channel>thought\nstep 1\nstep 2\n<channel|>", TH("step 1\nstep 2\n")),
    # --- model outputs
    ("output-text-only", "model_output", "The answer is 42.", out(T("The answer is 42."))),
    ("output-empty", "model_output", "", out()),
    ("output-call-then-stop", "model_output", "Let me check." + call("get_weather", "{city:Paris}") + "<|tool_response>",
     out(T("Let me check."), C("get_weather", {"city": "Paris"}), STOP("<|tool_response>"))),
    ("output-thought-text-turn-end", "model_output", "<|channel>thought\nEasy.<channel|>It is 4.<turn|>",
     out(TH("Easy."), T("It is 4."), STOP("<turn|>"))),
    ("output-parallel-calls", "model_output", call("a", "{}") + call("b", "{x:1}") + "\n",
     out(C("a", {}), C("b", {"x": 1}), T("\n"))),
    ("output-eos", "model_output", "Bye.<eos>", out(T("Bye."), STOP("<eos>"))),
    ("output-text-with-brackets", "model_output", "Note: a < b and c > d, {not a block}.",
     out(T("Note: a < b and c > d, {not a block}."))),
    ("output-whitespace-kept", "model_output", "  lead\n\n" + call("f", "{}") + "  trail  ",
     out(T("  lead\n\n"), C("f", {}), T("  trail  "))),
    # --- transcripts
    ("transcript-simple", "transcript", "<bos><|turn>user\nHi<turn|>\n<|turn>model\nHello!<turn|>\n",
     transcript(turn("user", T("Hi")), turn("model", T("Hello!")))),
    ("transcript-system-think-tools", "transcript",
     "<bos><|turn>system\n<|think|>\nBe brief.<|tool>declaration:f{description:" + s("d") + "}<tool|><turn|>\n",
     transcript(turn("system", {"type": "think"}, T("\nBe brief."), DECL("f", {"description": "d"})))),
    ("transcript-generation-prompt", "transcript", "<bos><|turn>user\nHi<turn|>\n<|turn>model\n",
     transcript(turn("user", T("Hi")), turn("model", closed=False))),
    ("transcript-tool-loop", "transcript",
     "<bos><|turn>user\nWeather?<turn|>\n<|turn>model\n" + call("w", "{}") + "<|tool_response>response:w{value:"
     + s("sunny") + "}<tool_response|>It is sunny.<turn|>\n",
     transcript(turn("user", T("Weather?")),
                turn("model", C("w", {}), R("w", {"value": "sunny"}), T("It is sunny.")))),
    ("transcript-awaiting-results", "transcript",
     "<bos><|turn>user\nGo<turn|>\n<|turn>model\n" + call("w", "{}") + "<|tool_response><|turn>user\nNever mind<turn|>\n",
     transcript(turn("user", T("Go")), turn("model", C("w", {}), {"type": "awaiting_response"}, closed=False),
                turn("user", T("Never mind")))),
    ("transcript-media", "transcript", "<bos><|turn>user\nLook: <|image|> and <|audio|><turn|>\n",
     transcript(turn("user", T("Look: "), {"type": "media", "kind": "image"}, T(" and "), {"type": "media", "kind": "audio"}))),
    ("transcript-no-bos-omp-style", "transcript", "<|turn>user\nHi<turn|><|turn>model\nYo<turn|>",
     transcript(turn("user", T("Hi")), turn("model", T("Yo")), bos=False)),
    ("transcript-thought-in-model-turn", "transcript",
     "<bos><|turn>model\n<|channel>thought\nhm\n<channel|>ok<turn|>\n",
     transcript(turn("model", TH("hm\n"), T("ok")))),
]

CB = "call_block"
INVALID = [
    ("trailing-comma-object", CB, call("f", "{a:1,‸}"), "trailing comma"),
    ("trailing-comma-list", CB, call("f", "{a:[1,‸]}"), "trailing comma"),
    ("empty-member", CB, call("f", "{a:1,‸,b:2}"), "empty member"),
    ("leading-comma", CB, call("f", "{‸,a:1}"), "empty member"),
    ("empty-list-member", CB, call("f", "{a:[1,‸,2]}"), "empty member"),
    ("missing-call-keyword", CB, "<|tool_call>‸get_weather{}<tool_call|>", "missing `call:`"),
    ("call-glued-to-name", CB, "<|tool_call>‸calldone{answer:ok}<tool_call|>", "missing `call:`"),
    ("stray-colon-before-call", CB, "<|tool_call>‸:call:bash{}<tool_call|>", "missing `call:`"),
    ("unterminated-string", CB, call("f", "{a:‸" + D + "abc}"), "unterminated string"),
    ("unterminated-string-at-end", CB, "<|tool_call>call:bash{command:‸" + D + "ls}", "unterminated string"),
    ("missing-closer", CB, "<|tool_call>call:f{a:1}‸", "missing `<tool_call|>`"),
    ("missing-closer-trailing-newline", CB, "<|tool_call>call:f{a:1}‸\n", "missing `<tool_call|>`"),
    ("wrong-closer-response", CB, "<|tool_call>call:f{a:1}‸<tool_response|>", "wrong closer"),
    ("wrong-closer-turn", CB, "<|tool_call>call:gdb{args:" + s("-batch") + "}‸<turn|>", "wrong closer"),
    ("wrong-closer-eos", CB, "<|tool_call>call:f{}‸<eos>", "wrong closer"),
    ("unbalanced-bracket-in-object", CB, call("f", "{a:[1‸}}"), "unbalanced brackets"),
    ("unbalanced-brace-in-list", CB, call("f", "{a:{b:1‸]}"), "unbalanced brackets"),
    ("extra-closing-brace", CB, "<|tool_call>call:f{a:1}‸}<tool_call|>", "unbalanced brackets"),
    ("json-quoted-value", CB, call("f", '{a:‸"x"}'), "JSON-quoted string"),
    ("json-quoted-key", CB, call("f", '{‸"a":1}'), "JSON-quoted string"),
    ("json-quoted-in-list", CB, call("f", '{a:[‸"x"]}'), "JSON-quoted string"),
    ("equals-instead-of-colon", CB, call("f", "{a‸=1}"), "`=` instead of `:`"),
    ("python-kwargs-call", CB, "<|tool_call>call:todo‸(todos=[])<tool_call|>", "expected `{`"),
    ("malformed-number-letters", CB, call("f", "{a:‸12abc}"), "malformed number `12abc`"),
    ("malformed-number-hex", CB, call("f", "{a:‸0x10}"), "malformed number"),
    ("malformed-number-two-dots", CB, call("f", "{a:‸1.2.3}"), "malformed number"),
    ("malformed-number-underscore", CB, call("f", "{a:‸1_000}"), "malformed number"),
    ("malformed-number-plus-sign", CB, call("f", "{a:‸+5}"), "malformed number"),
    ("malformed-number-bare-exponent", CB, call("f", "{a:‸1e}"), "malformed number"),
    ("malformed-number-lone-dot", CB, call("f", "{a:‸.}"), "malformed number"),
    ("malformed-number-arithmetic", CB, call("calculator", "{expression:‸432+1}"), "malformed number"),
    ("malformed-number-exponent-sign-only", CB, call("f", "{a:‸1e+}"), "malformed number"),
    ("number-out-of-range", CB, call("f", "{a:‸1e1000}"), "number out of range"),
    ("text-after-closing-brace", CB, "<|tool_call>call:f{a:1} ‸extra<tool_call|>", "text after the closing brace"),
    ("missing-closing-brace", CB, "<|tool_call>call:f{a:1‸", "missing `}`"),
    ("missing-arguments", CB, "<|tool_call>call:f‸<tool_call|>", "expected `{`"),
    ("missing-name", CB, "<|tool_call>call:‸{}<tool_call|>", "expected name"),
    ("name-with-space", CB, "<|tool_call>call:my ‸tool{}<tool_call|>", "expected `{`"),
    ("name-bad-character", CB, "<|tool_call>call:f‸!{}<tool_call|>", "expected `{`"),
    ("missing-value", CB, call("f", "{a:‸}"), "missing value"),
    ("missing-value-before-comma", CB, call("f", "{a:‸,b:1}"), "missing value"),
    ("missing-colon", CB, call("f", "{a‸}"), "expected `:`"),
    ("string-key-without-value", CB, call("f", "{" + s("x") + "‸}"), "expected `:`"),
    ("apostrophe-in-bare-word", CB, call("f", "{a:it‸'s}"), "unexpected"),
    ("single-quoted-string", CB, call("f", "{a:‸'x'}"), "unexpected"),
    ("control-token-after-bare-word", CB, call("f", "{a:x‸<|image|>}"), "unexpected `<|image|>`"),
    ("empty-input", CB, "‸", "unexpected end of input"),
    ("two-blocks-as-one", CB, call("f", "{}") + "‸" + call("g", "{}"), "where the input should end"),
    ("missing-comma-between-members", CB, call("f", "{a:1 ‸b:2}"), "expected `,` or `}`"),
    ("missing-comma-in-list", CB, call("f", "{a:[1 ‸2]}"), "expected `,` or `]`"),
    ("non-ascii-name", CB, "<|tool_call>call:m‸étéo{}<tool_call|>", "expected `{`"),
    ("non-ascii-key", CB, call("f", "{cl‸é:1}"), "expected `:`"),
    ("response-missing-keyword", "response_block", "<|tool_response>‸get_weather{a:1}<tool_response|>", "missing response keyword"),
    ("response-wrong-closer", "response_block", "<|tool_response>response:f{a:1}‸<tool_call|>", "wrong closer"),
    ("response-extra-brace", "response_block", "<|tool_response>response:f{a:1}‸}<tool_response|>", "unbalanced brackets"),
    ("declaration-missing-keyword", "declaration_block", "<|tool>‸declare:f{}<tool|>", "missing `declaration:`"),
    ("declaration-trailing-comma", "declaration_block",
     "<|tool>declaration:f{description:" + s("d") + ",parameters:{required:[" + s("x") + "],‸}}<tool|>", "trailing comma"),
    ("declaration-unclosed", "declaration_block", "<|tool>declaration:f{description:" + s("d") + "}‸", "missing `<tool|>`"),
    ("thought-unclosed", "thought", "<|channel>thought\nnever closed‸", "missing `<channel|>`"),
    ("thought-other-channel", "thought", "‸<|channel>analysis\nx<channel|>", "unexpected"),
    ("thought-call-inside", "thought", "<|channel>thought\nx‸<|tool_call>call:f{}<tool_call|><channel|>", "expected `<channel|>`"),
    ("output-text-after-stop", "model_output", call("f", "{}") + "<eos>‸more text", "where the input should end"),
    ("output-stray-channel-close", "model_output", "Done.‸<channel|>", "closes no thought"),
    ("output-unknown-control-token", "model_output", "a‸<|foo|>b", "unexpected"),
    ("output-broken-block", "model_output", "x" + call("f", "{a:1,‸}"), "trailing comma"),
    ("output-unclosed-call", "model_output", "Sure." + "<|tool_call>call:f{a:1}‸", "missing `<tool_call|>`"),
    ("output-call-closed-by-turn-end", "model_output", "<|tool_call>call:f{a:1}‸<turn|>", "wrong closer"),
    ("transcript-turn-without-role", "transcript", "<bos><|turn>\n‸Hi<turn|>", "expected role line"),
    ("transcript-space-after-role", "transcript", "<bos><|turn>‸user \nHi<turn|>", "expected role line"),
    ("transcript-double-close", "transcript", "<bos><|turn>user\nHi<turn|>‸<turn|>", "unexpected `<turn|>`"),
    ("transcript-text-between-turns", "transcript", "<bos><|turn>user\nHi<turn|>\n‸hello<|turn>user\nx<turn|>", "unexpected"),
    ("transcript-role-without-newline", "transcript", "<bos><|turn>‸userHi<turn|>", "expected role line"),
    ("transcript-bos-twice", "transcript", "<bos>‸<bos><|turn>user\nHi<turn|>", "unexpected `<bos>`"),
]


# --- streams --------------------------------------------------------------------------------------
def _end(index, name, arguments, raw, diagnostics=(), recovered=False):
    return ("tool_call_end", {"id": f"call_{index}", "index": index, "name": name, "arguments": arguments,
                              "raw": raw, "diagnostics": list(diagnostics), "recovered": recovered})


def _start(index, name):
    return ("tool_call_start", {"id": f"call_{index}", "index": index, "name": name})


CALL = "<|tool_call>call:get_weather{location:" + s("Tokyo, JP") + "}<tool_call|>"
STREAMS = [
    ("text-only", {}, [(("text", {"text": "The answer is 42."}), "The answer is 42.")]),
    ("one-call", {}, [
        (_start(0, "get_weather"), "<|tool_call>call:get_weather{"),
        (_end(0, "get_weather", {"location": "Tokyo, JP"}, CALL), "location:" + s("Tokyo, JP") + "}<tool_call|>"),
    ]),
    ("prose-thought-parallel-calls-stop", {}, [
        (("text", {"text": "Let me check. "}), "Let me check. "),
        (("thinking_start", {}), "<|channel>thought\n"),
        (("thinking_delta", {"text": "two calls"}), "two calls"),
        (("thinking_end", {}), "<channel|>"),
        (_start(0, "a"), "<|tool_call>call:a{"),
        (_end(0, "a", {"x": 1}, "<|tool_call>call:a{x:1}<tool_call|>"), "x:1}<tool_call|>"),
        (_start(1, "b-c"), "<|tool_call>call:b-c{"),
        (_end(1, "b-c", {}, "<|tool_call>call:b-c{}<tool_call|>"), "}<tool_call|>"),
        (("stop", {"marker": "<|tool_response>"}), "<|tool_response>"),
    ]),
    ("closer-inside-string", {}, [
        (_start(0, "todowrite"), "<|tool_call>call:todowrite{"),
        (_end(0, "todowrite", {"content": "literal }<tool_call|> inside"},
              "<|tool_call>call:todowrite{content:" + s("literal }<tool_call|> inside") + "}<tool_call|>"),
         "content:" + s("literal }<tool_call|> inside") + "}<tool_call|>"),
        (("text", {"text": " after"}), " after"),
    ]),
    ("thought-without-newline", {}, [
        (("thinking_start", {}), "<|channel>thought"),
        (("thinking_delta", {"text": "short"}), "short"),
        (("thinking_end", {}), "<channel|>"),
        (("text", {"text": "ok"}), "ok"),
    ]),
    ("empty-thought", {}, [
        (("thinking_start", {}), "<|channel>thought\n"),
        (("thinking_end", {}), "<channel|>"),
        (("text", {"text": "5 + 3 = 8"}), "5 + 3 = 8"),
    ]),
    ("call-inside-unclosed-thinking", {}, [
        (("thinking_start", {}), "<|channel>thought\n"),
        (("thinking_delta", {"text": "Let's go."}), "Let's go."),
        (("thinking_end", {}), ""),
        (_start(0, "f"), "<|tool_call>call:f{"),
        (_end(0, "f", {}, "<|tool_call>call:f{}<tool_call|>"), "}<tool_call|>"),
    ]),
    ("start-in-thinking", {"start_in_thinking": True}, [
        (("thinking_start", {}), ""),
        (("thinking_delta", {"text": "Sure, 42"}), "Sure, 42"),
        (("thinking_end", {}), "<channel|>"),
        (("text", {"text": "Hello"}), "Hello"),
    ]),
    ("thinking-off", {"parse_thinking": False}, [
        (("text", {"text": "<|channel>thought\nx<channel|>y"}), "<|channel>thought\nx<channel|>y"),
    ]),
    ("turn-end-stops", {}, [
        (("text", {"text": "The answer is 4."}), "The answer is 4."),
        (("stop", {"marker": "<turn|>"}), "<turn|>"),
    ]),
    ("call-closed-by-turn-end", {}, [
        (_start(0, "gdb"), "<|tool_call>call:gdb{"),
        # the diagnostic points just past the raw block (43 characters): line 1, column 44; the
        # call is complete but not closed by <tool_call|>, so it is marked recovered
        (_end(0, "gdb", {"args": "-batch"}, "<|tool_call>call:gdb{args:" + s("-batch") + "}",
              [{"severity": "warning", "code": "missing-closer", "message": "the block is not closed by <tool_call|>",
                "line": 1, "column": 44, "pos": 43, "end": 43}], recovered=True),
         "args:" + s("-batch") + "}"),
        (("stop", {"marker": "<turn|>"}), "<turn|>"),
    ]),
    ("markup-in-text-is-text", {}, [
        (("text", {"text": "a < b, {not a block}, <|tool_c"}), "a < b, {not a block}, <|tool_c"),
    ]),
]


def _stream_files():
    for name, options, pieces in STREAMS:
        text = "".join(piece for _, piece in pieces)
        events, pos = [], 0
        for (kind, fields), piece in pieces:
            event = {"type": kind, **fields, "span": [pos, pos + len(piece)]}
            pos += len(piece)
            events.append(event)
        yield name, {"text": text, "options": options, "events": events}


def line_col(text, pos):
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def export(directory) -> dict:
    """Write the corpus under `directory`; the number of files of each kind."""
    root = pathlib.Path(directory)
    for kind in ("valid", "invalid", "streams"):
        folder = root / kind
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
    names = set()

    def write(kind, name, text, data):
        assert name not in names, name
        names.add(name)
        if text is not None:
            (root / kind / f"{name}.gemma").write_bytes(text.encode("utf-8"))
        (root / kind / f"{name}.json").write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")

    for name, start, text, expected in VALID:
        write("valid", name, text, {"start": start, "expected": expected})
    for name, start, marked, message in INVALID:
        assert marked.count(MARK) == 1, name
        pos = marked.index(MARK)
        text = marked.replace(MARK, "")
        line, column = line_col(text, pos)
        write("invalid", name, text, {"start": start, "line": line, "column": column, "pos": pos, "message": message})
    for name, data in _stream_files():
        write("streams", name, None, data)
    return {"valid": len(VALID), "invalid": len(INVALID), "streams": len(STREAMS)}
