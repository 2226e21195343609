# SPDX-License-Identifier: ISC
# relay.py: the TCP relay that tests/holdback.py and tests/alternate.py
# run: it listens on 127.0.0.1, writes its port to DIR/port, and joins each
# client to the Unix socket a function names, until killed.
import os
import socket
import threading


def pump(src, dst, look=None):
    """Copy src to dst until either ends; look(data) first sees what the
    client sends (a query is one write of libpq's: it comes in one piece)."""
    while True:
        try:
            data = src.recv(65536)
        except OSError:
            data = b""
        if not data:
            break
        if look is not None:
            look(data)
        try:
            dst.sendall(data)
        except OSError:
            break
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(top, target, look=None):
    """Relay each client to the socket target() names, for ever."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    with open(os.path.join(top, "port.tmp"), "w") as f:
        f.write("%d\n" % listener.getsockname()[1])
    os.rename(os.path.join(top, "port.tmp"), os.path.join(top, "port"))
    while True:
        client = listener.accept()[0]
        server = socket.socket(socket.AF_UNIX)
        server.connect(target())
        for args in ((client, server, look), (server, client, None)):
            threading.Thread(target=pump, args=args, daemon=True).start()
