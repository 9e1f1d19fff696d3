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
Prints its port on stdout once it listens (port 0 = a free one). With EXPECT_KEY set,
any request without "Authorization: Bearer $EXPECT_KEY" gets a 401.
"""
import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODELS = ["ok", "slow-first-byte", "cut", "malformed", "e500", "e429", "e429-always", "nonjson", "endless", "stall"]
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

    def do_GET(self):
        if not self.authorized():
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

    def do_POST(self):
        if not self.authorized():
            return
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
        count = n if model != "endless" else 10**9
        for i in range(count):
            if model == "cut" and i == 3:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            time.sleep(0.005)
            try:
                self.event(self.piece(chat, " tok%d" % i))
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
