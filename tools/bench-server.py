#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# bench-server.py: generated tokens per second over all clients of an
# OpenAI-compatible server (rt-server, llama-server), for 1, 4 and 16
# concurrent clients (or those of --clients), each asking for one greedy
# completion, and each count's throughput as a multiple of one client's.
# Start the server with at least as many slots as clients (rt-server and
# llama-server: -np N) to see continuous batching:
#
#   python3 tools/bench-server.py http://127.0.0.1:8080 [N_TOKENS] [--clients 1,4,16]
import json, sys, threading, time, urllib.request

def one(url, n, out):
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": n, "temperature": 0}).encode()
    req = urllib.request.Request(url + "/v1/completions", body, {"Content-Type": "application/json"})
    r = json.load(urllib.request.urlopen(req, timeout=600))
    out.append(r["usage"]["completion_tokens"])

def main():
    args = sys.argv[1:]
    counts = [1, 4, 16]
    if "--clients" in args:
        i = args.index("--clients")
        counts = [int(x) for x in args[i + 1].split(",")]
        del args[i:i + 2]
    url, n = args[0], int(args[1]) if len(args) > 1 else 32
    one(url, 4, [])  # warm-up
    base = None
    for clients in counts:
        got = []
        t0 = time.time()
        ts = [threading.Thread(target=one, args=(url, n, got)) for _ in range(clients)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        dt = time.time() - t0
        rate = sum(got) / dt
        base = base or rate
        print(f"{clients:2d} clients: {sum(got)} tokens in {dt:.2f} s, {rate:.1f} tokens/s "
              f"({rate / base:.2f}x {counts[0]} client{'s' if counts[0] > 1 else ''})", flush=True)

if __name__ == "__main__":
    main()
