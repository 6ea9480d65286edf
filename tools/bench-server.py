#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# bench-server.py: generated tokens per second over all clients of an
# OpenAI-compatible server (rt-server, llama-server), for 1, 4 and 16
# concurrent clients, each asking for one greedy completion:
#
#   python3 tools/bench-server.py http://127.0.0.1:8080 [N_TOKENS]
import json, sys, threading, time, urllib.request

def one(url, n, out):
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": n, "temperature": 0}).encode()
    req = urllib.request.Request(url + "/v1/completions", body, {"Content-Type": "application/json"})
    r = json.load(urllib.request.urlopen(req, timeout=600))
    out.append(r["usage"]["completion_tokens"])

def main():
    url, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 32
    one(url, 4, [])  # warm-up
    for clients in (1, 4, 16):
        got = []
        t0 = time.time()
        ts = [threading.Thread(target=one, args=(url, n, got)) for _ in range(clients)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        dt = time.time() - t0
        print(f"{clients:2d} clients: {sum(got)} tokens in {dt:.2f} s, {sum(got) / dt:.1f} tokens/s")

if __name__ == "__main__":
    main()
