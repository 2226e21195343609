#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
# alternate.py: a TCP relay that sends each new connection to the next of
# the PostgreSQL Unix SOCKETs in turn, as a proxy may route one client's
# two connections to two servers.
#   usage: alternate.py DIR SOCKET...
# Listens on 127.0.0.1, on a port it writes to DIR/port; runs until killed.
import itertools
import os
import socket
import sys
import threading

top, targets = sys.argv[1], itertools.cycle(sys.argv[2:])


def pump(src, dst):
    while True:
        try:
            data = src.recv(65536)
        except OSError:
            data = b""
        if not data:
            break
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
    server.connect(next(targets))
    for args in ((client, server), (server, client)):
        threading.Thread(target=pump, args=args, daemon=True).start()


listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(16)
with open(os.path.join(top, "port.tmp"), "w") as f:
    f.write("%d\n" % listener.getsockname()[1])
os.rename(os.path.join(top, "port.tmp"), os.path.join(top, "port"))
while True:
    relay(listener.accept()[0])
