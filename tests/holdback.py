#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
# holdback.py: a TCP relay (tests/relay.py) to a PostgreSQL Unix socket that
# holds back the first client message holding NEEDLE: it creates DIR/held,
# and sends the message on only once DIR/go exists. The pause lets a test
# freeze the backend (SIGSTOP) before that very query reaches it.
#   usage: holdback.py DIR SOCKET NEEDLE
# Listens on 127.0.0.1, on a port it writes to DIR/port; runs until killed.
import os
import sys
import threading
import time

import relay

top, target, needle = sys.argv[1], sys.argv[2], sys.argv[3].encode()
once = threading.Lock()


def look(data):
    if needle in data and once.acquire(blocking=False):
        open(os.path.join(top, "held"), "w").close()
        while not os.path.exists(os.path.join(top, "go")):
            time.sleep(0.02)


relay.serve(top, lambda: target, look)
