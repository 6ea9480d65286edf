#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# bench-server.py: generated tokens per second over all clients of an
# OpenAI-compatible server (rt-server, llama-server), for 1, 4 and 16
# concurrent clients (or those of --clients), each asking for one greedy
# completion, and each count's throughput as a multiple of one client's.
# Start the server with at least as many slots as clients (rt-server and
# llama-server: -np N) to see continuous batching:
#
#   python3 tools/bench-server.py http://127.0.0.1:8080 [N_TOKENS] [--clients 1,4,16] [--pid PID]
#
# On a shared machine the wall-clock rates move with the others' load;
# --pid (the server's process, Linux) adds the CPU time it used for each
# count and the tokens per CPU second, which move far less (with -t 1 they
# are the rate a quiet core would give, the server's waits aside).
import json, os, sys, threading, time, urllib.request

def one(url, n, out):
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": n, "temperature": 0}).encode()
    req = urllib.request.Request(url + "/v1/completions", body, {"Content-Type": "application/json"})
    r = json.load(urllib.request.urlopen(req, timeout=600))
    out.append(r["usage"]["completion_tokens"])

def cpu_seconds(pid):
    """utime + stime of process pid (Linux /proc), in seconds."""
    if pid is None:
        return 0.0
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

def take_option(args, name):
    if name not in args:
        return None
    i = args.index(name)
    value = args[i + 1]
    del args[i:i + 2]
    return value

def main():
    args = sys.argv[1:]
    counts = [1, 4, 16]
    pid = take_option(args, "--pid")
    clients = take_option(args, "--clients")
    if clients is not None:
        counts = [int(x) for x in clients.split(",")]
    url, n = args[0], int(args[1]) if len(args) > 1 else 32
    one(url, 4, [])  # warm-up
    base = None
    for clients in counts:
        got = []
        t0, c0 = time.time(), cpu_seconds(pid)
        ts = [threading.Thread(target=one, args=(url, n, got)) for _ in range(clients)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        dt, dc = time.time() - t0, cpu_seconds(pid) - c0
        rate = sum(got) / dt
        base = base or rate
        cpu = f", server CPU {dc:.2f} s, {sum(got) / dc:.1f} tokens per CPU s" if pid and dc > 0 else ""
        print(f"{clients:2d} clients: {sum(got)} tokens in {dt:.2f} s, {rate:.1f} tokens/s "
              f"({rate / base:.2f}x {counts[0]} client{'s' if counts[0] > 1 else ''}){cpu}", flush=True)

if __name__ == "__main__":
    main()
