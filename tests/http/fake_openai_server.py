#!/usr/bin/env python3
"""An OpenAI-compatible server for edgeprobe's endpoint tests, well-behaved or not.

The model name of a request picks its behaviour, so one server serves every scenario:
  ok               streams max_tokens one-token chunks (5 ms apart), usage, [DONE]
  slow-first-byte  as ok after 1.5 s of silence
  cut              three chunks, then the connection closes mid-stream
  malformed        an event whose data is not JSON
  e500             HTTP 500 with a JSON error
  e429             HTTP 429 (Retry-After: 1) twice, then as ok
  e429-always      HTTP 429 (Retry-After: 1) every time
  nonjson          HTTP 200 with an HTML body
  endless          content chunks until the client hangs up
  stall            headers, then nothing at all
Hostile streams (docs/endpoint.md, "Hostile servers"):
  no-dispatch      data: lines without the blank line that dispatches them, forever
  no-newline       one data line that never ends
  tiny-events      role-only events, each cut into 1-byte HTTP chunks, forever
  comments         keep-alive comments in 64 KiB chunks, forever
  bad-utf8         a content event whose JSON holds bytes that are not UTF-8
  nul-escape       content with NUL, ESC sequences and a newline (valid JSON), then as ok
  wrong-types      usage, choices, content and finish_reason of the wrong JSON types, then as ok
  huge-text        content chunks of 512 KiB
  cl-lie           an event stream with Content-Length 1000000, a few events, then a close
  gzip             an event stream with Content-Encoding: gzip
  redirect         HTTP 307 to the same URL
  slowloris        an event stream one byte per second
  e500-multiline   HTTP 500 whose error message has newlines and escape sequences
  ok-then-no-dispatch  as ok for the first request, as no-dispatch after
  deep-json        an event nested 200,000 levels deep
A path prefix /h/MODE/ (the endpoint URL http://127.0.0.1:PORT/h/MODE) picks how GET
/v1/models misbehaves: redirect-loop, redirect-away (off loopback), gzip-bomb, escape-names,
wrong-types, cl-lie, slowloris, deep-json; POSTs under the prefix behave by their model as above.
Prints its port on stdout once it listens (port 0 = a free one). With EXPECT_KEY set,
any request without "Authorization: Bearer $EXPECT_KEY" gets a 401.
"""
import json
import os
import socket
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODELS = ["ok", "slow-first-byte", "cut", "malformed", "e500", "e429", "e429-always", "nonjson", "endless", "stall",
          "no-dispatch", "no-newline", "tiny-events", "comments", "bad-utf8", "nul-escape", "wrong-types",
          "huge-text", "cl-lie", "gzip", "redirect", "slowloris", "e500-multiline", "ok-then-no-dispatch", "deep-json"]
ESCAPES = "\x1b[2J\x1b]0;pwned\x07\u009b31m"


def gzip_bomb():
    """64 MiB of zeros as gzip: about 64 KiB on the wire."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    return b"".join(c.compress(block) for _ in range(64)) + c.flush()
retries_seen = {}
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-openai/1.0"
    disable_nagle_algorithm = True  # each chunk leaves at once, as a token streaming server's should
    sys_version = ""

    def log_message(self, *args):
        pass

    def send_json(self, status, obj, extra_headers=()):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra_headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def authorized(self):
        key = os.environ.get("EXPECT_KEY")
        if key and self.headers.get("Authorization") != "Bearer " + key:
            self.send_json(401, {"error": {"message": "missing or wrong API key"}})
            return False
        return True

    def prefix_mode(self):
        """The /h/MODE/ prefix of the path, removed from self.path."""
        if self.path.startswith("/h/"):
            mode, _, rest = self.path[3:].partition("/")
            self.path = "/" + rest
            return mode
        return ""

    def hostile_models(self, mode):
        if mode == "redirect-loop":
            self.send_response(302)
            self.send_header("Location", "/h/redirect-loop/v1/models")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif mode == "redirect-away":
            self.send_response(301)
            self.send_header("Location", "http://192.0.2.1/v1/models")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif mode == "gzip-bomb":
            body = gzip_bomb()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif mode == "escape-names":
            self.send_json(200, {"data": [{"id": "evil" + ESCAPES}, {"id": "two\nlines"}, {"id": "x" * 5000}]},
                           [("Server", "fake\x1b[31m")])
        elif mode == "wrong-types":
            self.send_json(200, {"data": [{"id": 5}, "a string", {"id": "ok", "owned_by": 7, "meta": "x",
                                                                  "aliases": {"a": 1}}]})
        elif mode == "cl-lie":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b'{"data": [')
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        elif mode == "deep-json":
            body = b"[" * 200000 + b"]" * 200000
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif mode == "slowloris":
            for b in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" * 100:
                self.wfile.write(bytes([b]))
                self.wfile.flush()
                time.sleep(1)
        else:
            return False
        return True

    def do_GET(self):
        if not self.authorized():
            return
        mode = self.prefix_mode()
        if self.path == "/v1/models" and self.hostile_models(mode):
            return
        if self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in MODELS]})
        else:
            self.send_json(404, {"error": {"message": "not found"}})

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def event(self, obj):
        self.chunk(b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n")

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def piece(self, chat, text, finish=None):
        if chat:
            choice = {"index": 0, "delta": {"content": text} if text is not None else {}, "finish_reason": finish}
        else:
            choice = {"index": 0, "text": text or "", "finish_reason": finish}
        return {"object": "chat.completion.chunk" if chat else "text_completion", "model": self.model,
                "choices": [choice]}

    def hostile_stream(self, model, chat):
        """The hostile POST modes; False for the others."""
        if model == "e500-multiline":
            self.send_json(500, {"error": {"message": "the model crashed\nTraceback:\n  line 2" + ESCAPES}})
        elif model == "redirect":
            self.send_response(307)
            self.send_header("Location", self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif model in ("gzip", "cl-lie", "slowloris"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            if model == "gzip":
                body = gzip_bomb()
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif model == "cl-lie":
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                for i in range(3):
                    self.wfile.write(b"data: " + json.dumps(self.piece(chat, " tok%d" % i)).encode() + b"\n\n")
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
            else:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for b in b"data: " + b"x" * 1000:
                    self.chunk(bytes([b]))
                    time.sleep(1)
            return True
        else:
            if model not in ("no-dispatch", "no-newline", "tiny-events", "comments", "bad-utf8", "huge-text",
                             "deep-json"):
                return False
            self.start_stream()
            try:
                if model == "no-dispatch":
                    while True:
                        self.chunk(b"data: " + b"x" * 1000 + b"\n")
                elif model == "no-newline":
                    self.chunk(b"data: ")
                    while True:
                        self.chunk(b"y" * 4096)
                elif model == "tiny-events":
                    while True:
                        for b in b'data: {"choices": [{"delta": {"role": "assistant"}}]}\n\n':
                            self.chunk(bytes([b]))
                elif model == "comments":
                    while True:
                        self.chunk(b":\n" * 32768)
                elif model == "deep-json":
                    self.event(b"[" * 200000 + b"]" * 200000)
                elif model == "bad-utf8":
                    self.event(b'{"choices": [{"index": 0, "text": "ok \xff\xfe\xc0\x80 bad"}]}')
                    self.event(b"[DONE]")
                    self.chunk(b"")
                else:  # huge-text
                    while True:
                        self.event(self.piece(chat, "z" * (512 << 10)))
            except (BrokenPipeError, ConnectionResetError):
                pass
        return True

    def do_POST(self):
        if not self.authorized():
            return
        self.prefix_mode()
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        self.model = model = req.get("model", "")
        chat = self.path.endswith("/chat/completions")
        n = int(req.get("max_tokens", 16))
        if model == "e500":
            return self.send_json(500, {"error": {"message": "the model crashed"}})
        if model in ("e429", "e429-always"):
            with lock:
                seen = retries_seen.get(model, 0)
                retries_seen[model] = seen + 1
            if model == "e429-always" or seen % 3 < 2:
                return self.send_json(429, {"error": {"message": "slow down"}}, [("Retry-After", "1")])
        if model == "nonjson":
            body = b"<html><body>502 Bad Gateway</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if model == "ok-then-no-dispatch":
            with lock:
                seen = retries_seen.get(model, 0)
                retries_seen[model] = seen + 1
            if seen > 0:
                model = "no-dispatch"
        if self.hostile_stream(model, chat):
            return
        if model == "slow-first-byte":
            time.sleep(1.5)
        self.start_stream()
        if model == "stall":
            time.sleep(30)
            return
        if chat:
            self.event({"object": "chat.completion.chunk", "model": model,
                        "choices": [{"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}]})
        if model == "malformed":
            self.event(b"{this is not json")
            return self.chunk(b"")
        if model == "wrong-types":
            for bad in ({"choices": {"0": 1}}, {"choices": [5]}, {"choices": [{"delta": {"content": 5}}]},
                        {"choices": [{"delta": "x", "finish_reason": 42}]}, {"model": 7, "usage": "x"},
                        {"usage": {"prompt_tokens": "7", "completion_tokens": 1e30}},
                        {"usage": {"prompt_tokens": -3, "completion_tokens": 18446744073709551615}}):
                self.event(bad)
        count = n if model != "endless" else 10**9
        for i in range(count):
            if model == "cut" and i == 3:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            time.sleep(0.005)
            text = " tok%d" % i
            if model == "nul-escape" and i == 0:
                text = " nul\u0000 esc" + ESCAPES + " nl\n"
            try:
                self.event(self.piece(chat, text))
            except (BrokenPipeError, ConnectionResetError):
                return
        self.event(self.piece(chat, None if chat else "", "length"))
        if req.get("stream_options", {}).get("include_usage"):
            prompt = req.get("prompt", "")
            prompt_tokens = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
            self.event({"choices": [], "model": model,
                        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": n, "total_tokens": prompt_tokens + n}})
        self.event(b"[DONE]")
        self.chunk(b"")


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
