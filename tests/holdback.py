#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
# holdback.py: a TCP relay to a PostgreSQL Unix socket that holds back the
# first client message holding NEEDLE: it creates DIR/held, and sends the
# message on only once DIR/go exists. The pause lets a test freeze the
# backend (SIGSTOP) before that very query reaches it.
#   usage: holdback.py DIR SOCKET NEEDLE
# Listens on 127.0.0.1, on a port it writes to DIR/port; runs until killed.
import os
import socket
import sys
import threading
import time

top, target, needle = sys.argv[1], sys.argv[2], sys.argv[3].encode()
once = threading.Lock()


def hold():
    open(os.path.join(top, "held"), "w").close()
    while not os.path.exists(os.path.join(top, "go")):
        time.sleep(0.02)


def pump(src, dst, watch):
    while True:
        try:
            data = src.recv(65536)
        except OSError:
            data = b""
        if not data:
            break
        # A query is one write of libpq's: it comes in one piece.
        if watch and needle in data and once.acquire(blocking=False):
            hold()
        try:
            dst.sendall(data)
        except OSError:
            break
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def relay(client):
    server = socket.socket(socket.AF_UNIX)
    server.connect(target)
    for args in ((client, server, True), (server, client, False)):
        threading.Thread(target=pump, args=args, daemon=True).start()


listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(16)
with open(os.path.join(top, "port.tmp"), "w") as f:
    f.write("%d\n" % listener.getsockname()[1])
os.rename(os.path.join(top, "port.tmp"), os.path.join(top, "port"))
while True:
    relay(listener.accept()[0])
