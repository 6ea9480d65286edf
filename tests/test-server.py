#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# test-server.py: tools/rt-server from the outside, with clients no one
# here wrote (the openai Python package and curl), against servers this
# test starts on loopback ports the OS picks. Prints cmocka's summary
# lines so that tests/run.sh counts the checks.
#
#   server-1  /health and /v1/models answer (curl)
#   server-2  a greedy completion through the openai client is rt-run's
#             greedy text for the same prompt (the bundled model)
#   server-3  streaming: the SSE pieces, joined, are the same text
#   server-4  bad JSON, a missing prompt, a too-long prompt, a too-large
#             body, an unknown path: 4xx with an error body
#   server-5  a client gone mid-stream leaves the server answering
#   server-6  4 concurrent clients all answered, in bounded time
#   server-7  --api-key: 401 without it, 200 with it
#   server-8  chat with SmolLM2-135M-Instruct (when pip has it): the
#             answer through the openai client, streamed and not
#   server-9  5 concurrent clients (more than the 4 slots; streamed and
#             not) with greedy sampling get the texts they get one by one
#   server-10 "stop" (a string, a list; streamed and not; 4 clients at
#             once): the greedy text up to the stop, finish_reason "stop",
#             and the server still up (any stop used to crash it)
#   server-11 UTF-8 (SmolLM2): an emoji and a Japanese prompt streamed,
#             every chunk a delta with content, the pieces joined equal to
#             the whole reply, which is valid text
import json, os, re, socket, subprocess, sys, threading, time

B = os.environ.get("RT_TEST_BUILD_DIR", "build")
ENV = dict(os.environ, RT_PLUGINS="cpu")
passed, failed, skipped = 0, 0, 0

def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}")

def start(*args):
    p = subprocess.Popen([f"{B}/bin/rt-server", "--port", "0", *args], env=ENV,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
    if not m:
        p.kill()
        raise RuntimeError("rt-server did not start: " + line)
    threading.Thread(target=p.stderr.read, daemon=True).start()
    return p, int(m.group(1))

def curl(port, path, *args, stdin=None):
    r = subprocess.run(["curl", "-s", "-m", "60", "-w", "\n%{http_code}", f"http://127.0.0.1:{port}{path}", *args],
                       capture_output=True, text=True, input=stdin)
    body, _, code = r.stdout.rpartition("\n")
    return int(code or 0), body

def rt_run_text(prompt, n):
    out = subprocess.run([f"{B}/bin/rt-run", "-p", prompt, "-n", str(n)], env=ENV, capture_output=True,
                         text=True, timeout=60).stdout
    return out[len(prompt):].rstrip("\n")

def stops(port, want, openai):
    """server-10: want is the greedy 24-token text of "Once upon a time"."""
    global skipped
    if not openai:
        skipped += 1
        return
    words = want.split()
    stop = " " + words[2] if len(words) > 3 else None
    if stop is None or stop not in want:
        check("server-10 a stop in the text", False, want)
        return
    cut = want[:want.index(stop)]
    c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", timeout=60)
    def one(stop_field, stream):
        r = c.completions.create(model="m", prompt="Once upon a time", max_tokens=24, temperature=0,
                                 stop=stop_field, stream=stream)
        if not stream:
            return r.choices[0].text, r.choices[0].finish_reason
        chunks = list(r)
        return "".join(ch.choices[0].text for ch in chunks), chunks[-1].choices[0].finish_reason
    got = [one(stop, False), one([stop, "zzzz"], False), one(stop, True), one(["zzzz", stop], True)]
    check("server-10 stop", got == [(cut, "stop")] * 4, f"{got} vs {cut!r}")
    together = [None] * 4
    def run(i):
        together[i] = one([stop], i % 2 == 1)
    ts = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    [t.start() for t in ts]
    [t.join(90) for t in ts]
    check("server-10 stop, 4 clients", together == [(cut, "stop")] * 4, str(together))
    code, _ = curl(port, "/health")
    check("server-10 alive", code == 200)

def utf8(port, openai):
    """server-11, against SmolLM2."""
    c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", timeout=60)
    for name, prompt in [("emoji", "Reply with emoji only: \U0001F600\U0001F389\U0001F680"),
                         ("japanese", "\u65e5\u672c\u8a9e\u3067\u7b54\u3048\u3066\u304f\u3060\u3055\u3044\u3002"
                                      "\u3053\u3093\u306b\u3061\u306f")]:
        msgs = [{"role": "user", "content": prompt}]
        whole = c.chat.completions.create(model="m", messages=msgs, temperature=0, max_tokens=40)
        text = whole.choices[0].message.content
        chunks = list(c.chat.completions.create(model="m", messages=msgs, temperature=0, max_tokens=40,
                                                stream=True))
        pieces = [ch.choices[0].delta.content for ch in chunks if ch.choices]
        joined = "".join(x or "" for x in pieces)
        non_ascii = any(ord(ch) > 127 and ch != "\ufffd" for ch in joined)
        check(f"server-11 utf-8 {name}", text and joined == text and non_ascii and
              all(x is not None for x in pieces[:-1]), f"{text!r} vs {joined!r} ({pieces[:5]})")

def main():
    global skipped
    try:
        import openai
    except ImportError:
        print("openai not installed (pip install openai)")
        openai = None
    p, port = start("-c", "256")
    try:
        code, body = curl(port, "/health")
        check("server-1 health", code == 200 and json.loads(body)["status"] == "ok", body)
        code, body = curl(port, "/v1/models")
        check("server-1 models", code == 200 and json.loads(body)["data"][0]["id"] == "stories260K.gguf", body)
        want = rt_run_text("Once upon a time", 24)
        if openai:
            c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", timeout=60)
            r = c.completions.create(model="stories260K.gguf", prompt="Once upon a time", max_tokens=24, temperature=0)
            check("server-2 greedy = rt-run", r.choices[0].text == want, f"{r.choices[0].text!r} vs {want!r}")
            check("server-2 usage", r.usage.completion_tokens == 24 and r.choices[0].finish_reason == "length")
            s = c.completions.create(model="stories260K.gguf", prompt="Once upon a time", max_tokens=24,
                                     temperature=0, stream=True)
            check("server-3 stream joined", "".join(ch.choices[0].text for ch in s) == want)
        else:
            skipped += 3
        code, body = curl(port, "/v1/completions", "-d", "{bad json")
        check("server-4 bad json", code == 400 and "error" in json.loads(body), body)
        code, body = curl(port, "/v1/completions", "-d", "{}")
        check("server-4 no prompt", code == 400 and "prompt" in json.loads(body)["error"]["message"], body)
        code, body = curl(port, "/v1/completions", "-d", json.dumps({"prompt": "word " * 400}))
        check("server-4 prompt too long", code == 400 and "context" in json.loads(body)["error"]["message"], body)
        code, body = curl(port, "/v1/completions", "--data-binary", "@-", stdin="x" * (2 << 20))
        check("server-4 body too large", code == 413, str(code))
        code, body = curl(port, "/nowhere")
        check("server-4 unknown path", code == 404 and "error" in json.loads(body), body)
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        req = json.dumps({"prompt": "Once upon a time", "max_tokens": 200, "stream": True})
        sock.sendall(f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(req)}\r\n\r\n{req}".encode())
        sock.recv(200)
        sock.close()
        code, _ = curl(port, "/health")
        check("server-5 alive after a disconnect", code == 200)
        results = []
        def client():
            code, body = curl(port, "/v1/completions", "-d", json.dumps({"prompt": "Once upon a time",
                                                                          "max_tokens": 16, "temperature": 0}))
            results.append(code == 200 and json.loads(body)["choices"][0]["text"] == rt_text16)
        rt_text16 = want[:0] + rt_run_text("Once upon a time", 16)
        t0 = time.time()
        ts = [threading.Thread(target=client) for _ in range(4)]
        [t.start() for t in ts]
        [t.join(90) for t in ts]
        check("server-6 4 clients", results == [True] * 4 and time.time() - t0 < 90, str(results))
        prompts = ["Once upon a time", "The dog", "Lily was sad because", "One day, Tom", "The sun"]
        def complete(prompt, stream):
            body = json.dumps({"prompt": prompt, "max_tokens": 20, "temperature": 0, "stream": stream})
            code, out = curl(port, "/v1/completions", "-d", body)
            if not stream:
                return json.loads(out)["choices"][0]["text"] if code == 200 else None
            events = [l[6:] for l in out.split("\n") if l.startswith("data: ") and l != "data: [DONE]"]
            return "".join(json.loads(e)["choices"][0]["text"] for e in events)
        alone = [complete(q, False) for q in prompts]
        together = [None] * len(prompts)
        def one(i):
            together[i] = complete(prompts[i], i % 2 == 1)
        ts = [threading.Thread(target=one, args=(i,)) for i in range(len(prompts))]
        [t.start() for t in ts]
        [t.join(90) for t in ts]
        check("server-9 5 concurrent greedy = sequential", together == alone and None not in alone,
              f"{together} vs {alone}")
        stops(port, want, openai)
    finally:
        p.terminate()
        p.wait(10)
    p, port = start("--api-key", "s3cret")
    try:
        code, _ = curl(port, "/v1/models")
        check("server-7 no key", code == 401)
        code, _ = curl(port, "/v1/models", "-H", "Authorization: Bearer s3cret")
        check("server-7 key", code == 200)
    finally:
        p.terminate()
        p.wait(10)
    model = subprocess.run([sys.executable, "tests/pip_models.py"], capture_output=True, text=True).stdout.split("\n")[0]
    if not openai or not model or not os.path.exists(model):
        print("server-8: skipped (SmolLM2 or openai not installed)")
        skipped += 1
    else:
        p, port = start("-m", model, "-c", "1024")
        try:
            c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", timeout=60)
            msgs = [{"role": "system", "content": "You are a helpful assistant."},
                    {"role": "user", "content": "What is the capital of France?"}]
            r = c.chat.completions.create(model="smollm2", messages=msgs, temperature=0, max_tokens=24)
            check("server-8 chat", "Paris" in r.choices[0].message.content, r.choices[0].message.content)
            s = c.chat.completions.create(model="smollm2", messages=msgs, temperature=0, max_tokens=24, stream=True)
            text = "".join(ch.choices[0].delta.content or "" for ch in s)
            check("server-8 chat stream", text == r.choices[0].message.content, text)
            utf8(port, openai)
        finally:
            p.terminate()
            p.wait(10)
    print(f"[  PASSED  ] {passed} test(s).")
    if failed:
        print(f"[  FAILED  ] {failed} test(s).")
    if skipped:
        print(f"[  SKIPPED ] {skipped} test(s).")
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main())
