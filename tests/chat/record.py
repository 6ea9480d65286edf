#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# record.py: records what llama.cpp's server renders for each template in
# this folder (NAME.jinja) and each conversation of CASES below, as
# NAME.CASE.txt, the fixtures test-chat compares rt's interpreter with.
# Needs a llama.cpp build (llama-server) and any small GGUF to load:
#
#   python3 tests/chat/record.py LLAMA_SERVER MODEL.gguf
#
# The conversations here and in tests/test-chat.c must agree.
import json, os, subprocess, sys, time, urllib.request

CASES = {
    "sys": [["system", "Be brief."], ["user", "Hi there"], ["assistant", "Hello!"],
            ["user", "  What is 2+2?  "]],
    "nosys": [["user", "Hi there"], ["assistant", "Hello! How can I help?"], ["user", "Name a colour."]],
    "one": [["user", "Tell me a story\nabout a cat."]],
}
SKIP = {("gemma2", "sys")}  # the template refuses a system message (raise_exception)

def render(port, messages):
    body = json.dumps({"messages": [{"role": r, "content": c} for r, c in messages]}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/apply-template", body,
                                 {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=30))["prompt"]

def main():
    server, model = sys.argv[1], sys.argv[2]
    here = os.path.dirname(os.path.abspath(__file__))
    port = 18123
    for f in sorted(os.listdir(here)):
        if not f.endswith(".jinja"):
            continue
        name = f[:-6]
        p = subprocess.Popen([server, "-m", model, "--jinja", "--chat-template-file",
                              os.path.join(here, f), "--port", str(port), "-c", "512", "-t", "1"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                    break
                except Exception:
                    time.sleep(0.2)
            for case, messages in CASES.items():
                if (name, case) in SKIP:
                    continue
                out = os.path.join(here, f"{name}.{case}.txt")
                with open(out + ".tmp", "w") as o:
                    o.write(render(port, messages))
                os.replace(out + ".tmp", out)
                print("wrote", out)
        finally:
            p.terminate()
            p.wait()

if __name__ == "__main__":
    main()
